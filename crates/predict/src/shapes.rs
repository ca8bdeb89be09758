//! Shapes from `Input Dims`: which operators are matrix products, their
//! `m x k x n`, and attention shapes.

use lumos_trace::InputDims;

/// A matrix product `[m, k] x [k, n]` (batch folded into `m`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GemmShape {
    /// Rows of the output (tokens, for a linear layer).
    pub m: u64,
    /// Columns of the output.
    pub n: u64,
    /// The reduced dimension.
    pub k: u64,
}

impl GemmShape {
    /// Its two dimensions other than the tokens' (`is_tokens` tells a
    /// token count): `k` and `n` where `m` is the tokens (a forward or
    /// input-gradient product), `m` and the other where `k` or `n` is (a
    /// weight gradient computed as a plain product, `[out, tokens] x
    /// [tokens, in]`). Where no dimension but `m` is the token count, `m`
    /// is taken for it.
    pub(crate) fn weight_dims(&self, is_tokens: impl Fn(u64) -> bool) -> (u64, u64) {
        if !is_tokens(self.m) && is_tokens(self.k) {
            (self.m, self.n)
        } else if !is_tokens(self.m) && is_tokens(self.n) {
            (self.m, self.k)
        } else {
            (self.k, self.n)
        }
    }

    /// Floating-point operations: `2 m n k`.
    pub fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64
    }
}

/// The sizes of input `i` when it is a tensor with no negative size;
/// empty for anything else (no input, a scalar, a tensor list), which no
/// shape rule accepts.
pub(crate) fn sizes(dims: &InputDims, i: usize) -> &[i64] {
    match dims.tensor(i) {
        Some(d) if d.iter().all(|&x| x >= 0) => d,
        _ => &[],
    }
}

/// The product of sizes, saturating (sizes are not negative).
fn prod(xs: &[i64]) -> u64 {
    xs.iter().fold(1u64, |p, &x| p.saturating_mul(x as u64))
}

/// True for operator names that are matrix products.
pub(crate) fn is_gemm_op(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    matches!(
        lower.as_str(),
        "aten::mm"
            | "aten::addmm"
            | "aten::bmm"
            | "aten::baddbmm"
            | "aten::matmul"
            | "aten::linear"
    ) || lower.contains("gemm")
}

/// The product an operator computes, from its name and `Input Dims`.
pub(crate) fn gemm_shape(op: &str, dims: &InputDims) -> Option<GemmShape> {
    let lower = op.to_ascii_lowercase();
    let at = |i: usize| sizes(dims, i);
    let two_d = |i: usize| Some(at(i)).filter(|d| d.len() == 2);
    let shape = |m: u64, k: i64, n: i64| GemmShape {
        m,
        k: k as u64,
        n: n as u64,
    };
    let shape = match lower.as_str() {
        "aten::mm" => {
            let (a, b) = (two_d(0)?, two_d(1)?);
            shape(a[0] as u64, a[1], b[1])
        }
        "aten::addmm" => {
            let (a, b) = (two_d(1)?, two_d(2)?);
            shape(a[0] as u64, a[1], b[1])
        }
        "aten::bmm" | "aten::baddbmm" => {
            let off = usize::from(lower == "aten::baddbmm");
            let (a, b) = (at(off), at(off + 1));
            if a.len() != 3 || b.len() != 3 {
                return None;
            }
            shape(prod(&a[..2]), a[2], b[2])
        }
        "aten::matmul" => {
            let (a, b) = (at(0), at(1));
            if a.len() < 2 || b.len() != 2 {
                return None;
            }
            shape(prod(&a[..a.len() - 1]), *a.last()?, b[1])
        }
        "aten::linear" => {
            let (a, w) = (at(0), two_d(1)?);
            if a.is_empty() {
                return None;
            }
            shape(prod(&a[..a.len() - 1]), *a.last()?, w[0])
        }
        _ if lower.contains("wgrad") => {
            // Weight gradient: input [m, k], output gradient [m, n],
            // accumulated into [n, k].
            let (a, g) = (two_d(0)?, two_d(1)?);
            shape(a[0] as u64, a[1], g[1])
        }
        _ => {
            // Some other GEMM op: the first two matrices that chain.
            let mut mats = (0..dims.len()).map(at).filter(|d| d.len() == 2);
            let (a, b) = (mats.next()?, mats.next()?);
            if a[1] != b[0] {
                return None;
            }
            shape(a[0] as u64, a[1], b[1])
        }
    };
    (shape.m > 0 && shape.n > 0 && shape.k > 0).then_some(shape)
}

/// True for kernel names of GEMM libraries (cuBLAS, CUTLASS, hipBLASLt).
pub(crate) fn is_gemm_kernel_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    [
        "gemm", "xmma", "cutlass", "nvjet", "cublas", "s16816", "s1688", "wgmma", "hgemm", "sgemm",
    ]
    .iter()
    .any(|p| lower.contains(p))
}

/// True for fused attention kernels.
pub(crate) fn is_attention_kernel_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    ["flash", "fmha", "attention", "sdpa"]
        .iter()
        .any(|p| lower.contains(p))
}

/// `(batch, seq, heads, head_dim)` of the query of attention op `op`, when
/// its first input is 4-D. PyTorch's scaled-dot-product attention ops
/// (`aten::scaled_dot_product_attention`, `aten::_scaled_dot_product_*`)
/// and `aten::_cudnn_attention_forward` take the query as `(batch, heads,
/// seq, head_dim)`; the kernels' own ops under them
/// (`aten::_flash_attention_forward`,
/// `aten::_efficient_attention_forward`) and FlashAttention's as
/// `(batch, seq, heads, head_dim)`.
pub(crate) fn attention_shape(op: &str, dims: &InputDims) -> Option<[u64; 4]> {
    let q = sizes(dims, 0);
    if q.len() != 4 {
        return None;
    }
    let q = [q[0] as u64, q[1] as u64, q[2] as u64, q[3] as u64];
    // `_scaled_dot_product_efficient_attention` calls
    // `_efficient_attention_forward` on the query transposed back to
    // (batch, seq, heads, head_dim); cuDNN's op takes SDPA's layout.
    let heads_before_seq = op.contains("scaled_dot_product") || op.contains("_cudnn_attention");
    Some(if heads_before_seq {
        [q[0], q[2], q[1], q[3]]
    } else {
        q
    })
}

/// The bytes of input `i` of an operator recording `dims` and `types`
/// (its `Input type` text, a JSON list of type names): a tensor's elements
/// times its type's size (`c10::BFloat16` as `BFloat16`). `None` for
/// anything but a tensor of a known type with at least one element.
pub(crate) fn tensor_bytes(dims: &InputDims, types: Option<&str>, i: usize) -> Option<u64> {
    let d = sizes(dims, i);
    if d.is_empty() {
        return None;
    }
    let size = element_size(types, i)?;
    Some(prod(d).saturating_mul(size)).filter(|&b| b > 0)
}

/// The size of one element of input `i` of an operator recording `types`
/// (its `Input type` text), where its type is a known one.
pub(crate) fn element_size(types: Option<&str>, i: usize) -> Option<u64> {
    let ty = types.and_then(|t| type_names(t).nth(i))?;
    lumos_trace::dtype_size(ty.strip_prefix("c10::").unwrap_or(ty))
}

/// The names of an `Input type` text, `["float", "", "c10::BFloat16"]`,
/// in order (PyTorch writes no escapes in them).
fn type_names(text: &str) -> impl Iterator<Item = &str> {
    text.split('"').skip(1).step_by(2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_dims(text: &str) -> Option<InputDims> {
        InputDims::parse(text)
    }

    #[test]
    fn shapes_of_common_ops() {
        let d = parse_dims("[[2048, 1, 6144], [6144, 9216]]").unwrap();
        assert_eq!(
            gemm_shape("aten::matmul", &d),
            Some(GemmShape {
                m: 2048,
                k: 6144,
                n: 9216
            })
        );
        let d = parse_dims("[[2048, 6144], [6144, 9216]]").unwrap();
        assert_eq!(
            gemm_shape("aten::mm", &d).unwrap().flops(),
            2.0 * 2048.0 * 6144.0 * 9216.0
        );
        let d = parse_dims("[[9216], [2048, 6144], [6144, 9216], [], []]").unwrap();
        assert_eq!(gemm_shape("aten::addmm", &d).unwrap().n, 9216);
        let d = parse_dims("[[4, 128, 64], [7168, 64]]").unwrap();
        assert_eq!(
            gemm_shape("aten::linear", &d),
            Some(GemmShape {
                m: 512,
                k: 64,
                n: 7168
            })
        );
        let d = parse_dims("[[2048, 6144], [2048, 9216], [9216, 6144]]").unwrap();
        assert_eq!(
            gemm_shape("fused_weight_gradient_mlp_cuda::wgrad_gemm_accum_fp32", &d),
            Some(GemmShape {
                m: 2048,
                k: 6144,
                n: 9216
            })
        );
        assert_eq!(
            gemm_shape("aten::mm", &parse_dims("[[], []]").unwrap()),
            None
        );
        // Tensor lists, scalars and negative sizes match no rule.
        let d = parse_dims("[[[1, 2], [3]], 5, [4, 4], [-1, 4], [4, 4]]").unwrap();
        assert_eq!(
            (sizes(&d, 0), sizes(&d, 1), sizes(&d, 3)),
            (&[][..], &[][..], &[][..])
        );
        assert_eq!(sizes(&d, 2), &[4, 4]);
        assert_eq!(gemm_shape("my_gemm", &d).unwrap().n, 4);
        let d = parse_dims("[[-2, -3], [3, 4]]").unwrap();
        assert_eq!(gemm_shape("aten::mm", &d), None);
        assert_eq!(
            attention_shape(
                "flash_attn::_flash_attn_forward",
                &parse_dims("[[1, 2048, 24, 128]]").unwrap()
            ),
            Some([1, 2048, 24, 128])
        );
        // PyTorch's SDPA holds the query as (batch, heads, seq, head_dim).
        let q = parse_dims("[[8, 16, 1024, 128], [8, 16, 1024, 128]]").unwrap();
        assert_eq!(
            attention_shape("aten::_scaled_dot_product_flash_attention", &q),
            Some([8, 1024, 16, 128])
        );
        // The ops SDPA calls take it back as (batch, seq, heads, head_dim).
        let q = parse_dims("[[8, 1024, 16, 128]]").unwrap();
        for op in [
            "aten::_efficient_attention_forward",
            "aten::_flash_attention_forward",
        ] {
            assert_eq!(attention_shape(op, &q), Some([8, 1024, 16, 128]), "{op}");
        }
        assert!(is_gemm_kernel_name(
            "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64"
        ));
        assert!(is_gemm_kernel_name(
            "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn"
        ));
        assert!(!is_gemm_kernel_name(
            "void at::native::vectorized_elementwise_kernel<4>"
        ));
        assert!(
            is_gemm_op("aten::mm")
                && is_gemm_op("fused_weight_gradient_mlp_cuda::wgrad_gemm_accum_fp32")
        );
    }
}
