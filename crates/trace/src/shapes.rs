//! `Input Dims`: the shapes PyTorch records for an operator's inputs
//! (`record_shapes=True`), parsed once by the reader into [`InputDims`].

use std::borrow::Borrow;
use std::fmt;
use std::sync::Arc;

use rustc_hash::FxHashSet;

/// One input of an operator, as `Input Dims` records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Input<'a> {
    /// A list of sizes: a tensor's shape (`[2048, 6144]`). PyTorch writes
    /// `[]` both for a 0-d tensor and for an argument that is not a tensor
    /// (a scalar, `None`), so an empty list means "no shape".
    Tensor(&'a [i64]),
    /// Anything else: a list of tensors (`[[2, 3], [4]]`), a number, a
    /// string, a list holding a non-integer.
    Other,
}

/// The `Input Dims` of an operator: one [`Input`] per argument, in order.
///
/// Compact and shared: one allocation holds every input, and cloning is a
/// reference-count increment, so a graph's scopes and the reader's events
/// hold the same value, and the reader keeps one copy per distinct list.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct InputDims {
    /// `[n, end_0, ..., end_{n-1}, sizes...]`: the number of inputs, then
    /// per input the end of its sizes in `sizes` (bitwise not of it for an
    /// [`Input::Other`], which has none), then every tensor's sizes.
    data: Arc<[i64]>,
}

impl InputDims {
    /// Parses the JSON text of an `Input Dims` value
    /// (`[[2048, 1, 6144], [6144, 9216], []]`). `None` if it is not a JSON
    /// array; entries that are not flat lists of integers become
    /// [`Input::Other`].
    pub fn parse(text: &str) -> Option<InputDims> {
        let mut s = Scan {
            b: text.as_bytes(),
            i: 0,
        };
        let mut ends = Vec::new();
        let mut sizes = Vec::new();
        s.ws();
        s.eat(b'[')?;
        s.ws();
        if s.eat(b']').is_none() {
            loop {
                s.ws();
                let tensor = s.input(&mut sizes)?;
                let end = sizes.len() as i64;
                ends.push(if tensor { end } else { !end });
                s.ws();
                if s.eat(b']').is_some() {
                    break;
                }
                s.eat(b',')?;
            }
        }
        s.ws();
        (s.i == s.b.len()).then(|| Self::assemble(&ends, &sizes))
    }

    /// The value holding `inputs`, in order.
    pub fn from_inputs<'a, I>(inputs: I) -> InputDims
    where
        I: IntoIterator<Item = Input<'a>>,
        I::IntoIter: Clone,
    {
        let mut data = Vec::new();
        Self::encode(inputs, &mut data);
        InputDims { data: data.into() }
    }

    /// Writes `inputs` into `data` in [`InputDims`]' layout, in two passes
    /// over them so that `data` grows once: a stored graph's reader makes
    /// one per scope with shapes, and growing three vectors cost more than
    /// the rest of the conversion.
    fn encode<'a, I>(inputs: I, data: &mut Vec<i64>)
    where
        I: IntoIterator<Item = Input<'a>>,
        I::IntoIter: Clone,
    {
        let inputs = inputs.into_iter();
        let (mut n, mut total) = (0usize, 0usize);
        for input in inputs.clone() {
            n += 1;
            if let Input::Tensor(d) = input {
                total += d.len();
            }
        }
        data.clear();
        data.reserve(1 + n + total);
        data.push(n as i64);
        let mut end = 0i64;
        for input in inputs.clone() {
            match input {
                Input::Tensor(d) => {
                    end += d.len() as i64;
                    data.push(end);
                }
                Input::Other => data.push(!end),
            }
        }
        for input in inputs {
            if let Input::Tensor(d) = input {
                data.extend_from_slice(d);
            }
        }
    }

    fn assemble(ends: &[i64], sizes: &[i64]) -> InputDims {
        let n = ends.len() as i64;
        InputDims {
            data: std::iter::once(n)
                .chain(ends.iter().copied())
                .chain(sizes.iter().copied())
                .collect(),
        }
    }

    /// Number of inputs.
    pub fn len(&self) -> usize {
        self.data[0] as usize
    }

    /// True if no input is recorded (`[]`).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Input `i`, if there is one.
    pub fn get(&self, i: usize) -> Option<Input<'_>> {
        let n = self.len();
        if i >= n {
            return None;
        }
        let end_of = |k: usize| {
            let e = self.data[1 + k];
            (if e < 0 { !e } else { e }) as usize
        };
        let start = if i == 0 { 0 } else { end_of(i - 1) };
        let raw = self.data[1 + i];
        Some(if raw < 0 {
            Input::Other
        } else {
            Input::Tensor(&self.data[1 + n + start..1 + n + raw as usize])
        })
    }

    /// The sizes of input `i` when it is a tensor.
    pub fn tensor(&self, i: usize) -> Option<&[i64]> {
        match self.get(i)? {
            Input::Tensor(d) => Some(d),
            Input::Other => None,
        }
    }

    /// Every input, in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Input<'_>> + '_ {
        (0..self.len()).map(|i| self.get(i).unwrap_or(Input::Other))
    }
}

// `InputDims` hashes and compares as its `data` slice (the derives see
// one field, and `Arc<[i64]>` hashes as the slice it holds), so a set of
// them can be searched by an encoded slice.
impl Borrow<[i64]> for InputDims {
    fn borrow(&self) -> &[i64] {
        &self.data
    }
}

/// Distinct [`InputDims`], each held once: [`Self::shared`] gives the
/// value already held for an equal list, and allocates only for a new one.
/// How a stored graph's reader shares the shapes its scopes repeat.
#[derive(Default)]
pub struct InputDimsSet {
    seen: FxHashSet<InputDims>,
    scratch: Vec<i64>,
}

impl InputDimsSet {
    /// The value for `inputs`: the one held if an equal list was given
    /// before, else a new one, held from now on.
    pub fn shared<'a, I>(&mut self, inputs: I) -> InputDims
    where
        I: IntoIterator<Item = Input<'a>>,
        I::IntoIter: Clone,
    {
        InputDims::encode(inputs, &mut self.scratch);
        if let Some(have) = self.seen.get(self.scratch.as_slice()) {
            return have.clone();
        }
        let dims = InputDims {
            data: self.scratch.as_slice().into(),
        };
        self.seen.insert(dims.clone());
        dims
    }
}

impl fmt::Debug for InputDims {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// A forgiving scanner over JSON text: the reader hands it values its own
/// parser has already checked, but [`InputDims::parse`] is public, so
/// anything unexpected gives `None`, never a panic.
struct Scan<'a> {
    b: &'a [u8],
    i: usize,
}

impl Scan<'_> {
    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    /// Consumes `c` if it is next.
    fn eat(&mut self, c: u8) -> Option<()> {
        (self.b.get(self.i) == Some(&c)).then(|| self.i += 1)
    }

    /// One entry of the outer list. A flat list of integers appends its
    /// sizes to `sizes` and gives true; anything else appends nothing and
    /// gives false.
    fn input(&mut self, sizes: &mut Vec<i64>) -> Option<bool> {
        if self.eat(b'[').is_none() {
            self.skip_value()?;
            return Some(false);
        }
        let start = sizes.len();
        let mut tensor = true;
        self.ws();
        if self.eat(b']').is_some() {
            return Some(true);
        }
        loop {
            self.ws();
            match self.b.get(self.i)? {
                b'-' | b'0'..=b'9' => {
                    let token = self.scalar()?;
                    match std::str::from_utf8(token).ok()?.parse::<i64>() {
                        Ok(v) if tensor => sizes.push(v),
                        Ok(_) => {}
                        Err(_) => tensor = false,
                    }
                }
                _ => {
                    self.skip_value()?;
                    tensor = false;
                }
            }
            self.ws();
            if self.eat(b']').is_some() {
                break;
            }
            self.eat(b',')?;
        }
        if !tensor {
            sizes.truncate(start);
        }
        Some(tensor)
    }

    /// A number or literal: the bytes up to the next delimiter.
    fn scalar(&mut self) -> Option<&[u8]> {
        let start = self.i;
        while let Some(&c) = self.b.get(self.i) {
            if matches!(c, b',' | b']' | b'}' | b' ' | b'\n' | b'\r' | b'\t') {
                break;
            }
            self.i += 1;
        }
        (self.i > start).then(|| &self.b[start..self.i])
    }

    /// Skips one value of any type (containers by bracket depth, without
    /// recursion).
    fn skip_value(&mut self) -> Option<()> {
        let mut depth = 0usize;
        loop {
            match *self.b.get(self.i)? {
                b'"' => self.skip_string()?,
                b'[' | b'{' => {
                    depth += 1;
                    self.i += 1;
                }
                b']' | b'}' => {
                    depth = depth.checked_sub(1)?;
                    self.i += 1;
                }
                b',' | b':' | b' ' | b'\n' | b'\r' | b'\t' if depth > 0 => self.i += 1,
                _ => {
                    self.scalar()?;
                }
            }
            if depth == 0 {
                return Some(());
            }
        }
    }

    fn skip_string(&mut self) -> Option<()> {
        self.i += 1;
        loop {
            match *self.b.get(self.i)? {
                b'"' => {
                    self.i += 1;
                    return Some(());
                }
                b'\\' => self.i += 2,
                _ => self.i += 1,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tensors_empty_and_other_inputs() {
        let d = InputDims::parse("[[2048, 1, 6144], [6144, 9216], []]").unwrap();
        assert_eq!(
            d.iter().collect::<Vec<_>>(),
            [
                Input::Tensor(&[2048, 1, 6144]),
                Input::Tensor(&[6144, 9216]),
                Input::Tensor(&[])
            ]
        );
        let text = r#" [ [[1, 2], [3]], 5, "x]", [1.5, 2], [-1, 4], [7], {"a": [1]}, null ] "#;
        let d = InputDims::parse(text).unwrap();
        assert_eq!(
            d.iter().collect::<Vec<_>>(),
            [
                Input::Other,
                Input::Other,
                Input::Other,
                Input::Other,
                Input::Tensor(&[-1, 4]),
                Input::Tensor(&[7]),
                Input::Other,
                Input::Other,
            ]
        );
        assert!(InputDims::parse("[]").unwrap().is_empty());
        let d = InputDims::parse("[[1], [[2]], [3, 4]]").unwrap();
        assert_eq!(d.len(), 3);
        assert_eq!(d.tensor(2), Some(&[3, 4][..]));
        assert_eq!(d.tensor(1), None);
        assert_eq!(d.get(3), None);
        assert_eq!(format!("{d:?}"), "[Tensor([1]), Other, Tensor([3, 4])]");
    }

    #[test]
    fn malformed_text_is_none() {
        for bad in [
            "",
            "5",
            "\"[[1]]\"",
            "{}",
            "[[1]",
            "[[1],]",
            "[1 2]",
            "[[1]] x",
            "[\"",
            "[[1,]]",
            "]",
        ] {
            assert!(InputDims::parse(bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn built_values_equal_parsed_ones() {
        let built =
            InputDims::from_inputs([Input::Tensor(&[4, 4]), Input::Other, Input::Tensor(&[])]);
        assert_eq!(built, InputDims::parse("[[4, 4], [[1]], []]").unwrap());
        assert_ne!(built, InputDims::parse("[[4, 4], [], []]").unwrap());
    }

    #[test]
    fn a_set_holds_each_distinct_list_once() {
        let mut set = InputDimsSet::default();
        let a = set.shared([Input::Tensor(&[4, 4]), Input::Other]);
        let b = set.shared([Input::Tensor(&[4, 4]), Input::Other]);
        let c = set.shared([Input::Tensor(&[4]), Input::Tensor(&[4])]);
        assert!(Arc::ptr_eq(&a.data, &b.data), "an equal list is shared");
        assert!(!Arc::ptr_eq(&a.data, &c.data));
        assert_eq!(a, InputDims::parse("[[4, 4], 1]").unwrap());
        assert_eq!(c, InputDims::parse("[[4], [4]]").unwrap());
        assert_eq!(set.seen.len(), 2);
    }
}
