//! The args of the events the timeline engine writes, kept as small typed
//! values until their event is written.

use lumos_trace::Fields;

use super::Dtype;

/// The args of a CPU op besides its `External id`. Ops are written when they
/// end, so their args wait on the op stack: kept inline, not allocated.
#[derive(Debug, Clone, Copy)]
pub(crate) enum OpArgs {
    None,
    /// `Input Dims` and `Input type` of BF16 tensors.
    Dims(InputShapes),
    /// The collective (`record_param_comms`).
    Coll(CollArgs),
}

impl OpArgs {
    pub(crate) fn write(&self, a: &mut Fields, groups: &[GroupArgs]) {
        match self {
            OpArgs::None => {}
            OpArgs::Dims(d) => d.write(a),
            OpArgs::Coll(c) => c.write(a, &groups[c.group]),
        }
    }
}

/// Shapes of up to [`InputShapes::INPUTS`] inputs with
/// [`InputShapes::SIZES`] sizes in all.
#[derive(Debug, Clone, Copy)]
pub(crate) struct InputShapes {
    sizes: [i64; InputShapes::SIZES],
    /// End of each input's sizes.
    ends: [u8; InputShapes::INPUTS],
    inputs: u8,
    /// Whether the tensors are FP32 (`float`) rather than BF16.
    float: bool,
}

impl InputShapes {
    const SIZES: usize = 16;
    const INPUTS: usize = 8;

    /// The shapes `dims`. Panics past the inline capacity, which the fixed
    /// shapes of the Megatron ops stay within.
    pub(crate) fn new(dims: &[&[u64]]) -> InputShapes {
        assert!(dims.len() <= Self::INPUTS, "{} inputs", dims.len());
        let mut d = InputShapes {
            sizes: [0; Self::SIZES],
            ends: [0; Self::INPUTS],
            inputs: dims.len() as u8,
            float: false,
        };
        let mut n = 0;
        for (i, input) in dims.iter().enumerate() {
            assert!(
                n + input.len() <= Self::SIZES,
                "more than {} sizes",
                Self::SIZES
            );
            for &x in *input {
                d.sizes[n] = x as i64;
                n += 1;
            }
            d.ends[i] = n as u8;
        }
        d
    }

    /// The same shapes, of FP32 tensors (the loss's logits and their
    /// gradient).
    pub(crate) fn float(mut self) -> InputShapes {
        self.float = true;
        self
    }

    fn tensors(&self) -> impl Iterator<Item = &[i64]> + '_ {
        (0..usize::from(self.inputs)).map(|i| {
            let start = if i == 0 { 0 } else { self.ends[i - 1] };
            &self.sizes[usize::from(start)..usize::from(self.ends[i])]
        })
    }

    fn write(&self, a: &mut Fields) {
        let ty = if self.float { "float" } else { "c10::BFloat16" };
        let type_of = |t: &[i64]| if t.is_empty() { "" } else { ty };
        a.input_dims(self.tensors())
            .input_types(self.tensors().map(type_of));
    }
}

/// The args PyTorch records for a collective, on `record_param_comms` and
/// on its kernel.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CollArgs {
    pub name: &'static str,
    pub in_nelems: u64,
    pub out_nelems: u64,
    pub group_size: usize,
    pub dtype: Dtype,
    /// Index of the process group in `Gen::groups`.
    pub group: usize,
    pub seq: i64,
    /// Point-to-point: source and destination rank.
    pub src_dst: Option<(usize, usize)>,
}

impl CollArgs {
    pub(crate) fn write(&self, a: &mut Fields, group: &GroupArgs) {
        a.str("Collective name", self.name)
            .uint("In msg nelems", self.in_nelems)
            .uint("Out msg nelems", self.out_nelems)
            .uint("Group size", self.group_size as u64)
            .str("dtype", self.dtype.torch_name())
            .str("In split size", "[]")
            .str("Out split size", "[]")
            .str("Process Group Name", &group.name)
            .str("Process Group Description", group.desc)
            .str("Process Group Ranks", &group.ranks)
            .int("Seq", self.seq);
        if let Some((src, dst)) = self.src_dst {
            a.uint("Src Rank", src as u64).uint("Dst Rank", dst as u64);
        }
    }
}

/// A process group as collective args name it.
#[derive(Debug, Clone, Default)]
pub(crate) struct GroupArgs {
    pub name: String,
    pub desc: &'static str,
    /// `[0, 1, ...]`.
    pub ranks: String,
}
