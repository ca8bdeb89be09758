//! Which steps an analysis covers (`--steps`).

use std::fmt;
use std::str::FromStr;

/// Which steps an analysis covers: every step (the default), or a list of
/// positions and names, comma-separated:
///
/// - `3`: the step at position 3 (0-based, in trace order: the `#` column
///   of the tables, `index` in JSON);
/// - `2..4`: positions 2 and 3 (a half-open range, as in Rust and Python);
///   `2..=4` includes 4; `2..` runs to the last step, `..3` from the first;
/// - `ProfilerStep#5`: the step of that name (anything that is not a
///   number or a range is a name).
///
/// ```
/// use lumos_report::StepSelection;
///
/// let names: Vec<String> = (1..=5).map(|n| format!("ProfilerStep#{n}")).collect();
/// let s: StepSelection = "0,2..=3".parse().unwrap();
/// assert_eq!(s.resolve(&names).unwrap(), vec![0, 2, 3]);
/// let s: StepSelection = "ProfilerStep#5,1..2".parse().unwrap();
/// assert_eq!(s.resolve(&names).unwrap(), vec![1, 4]);
/// assert!("7".parse::<StepSelection>().unwrap().resolve(&names).is_err());
/// assert_eq!(StepSelection::all().resolve(&names).unwrap(), vec![0, 1, 2, 3, 4]);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StepSelection {
    /// Empty: every step.
    items: Vec<Item>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Item {
    /// Positions `start..=last` (`None`: to the last step). Inclusive, so
    /// that `..=usize::MAX` and position `usize::MAX` need no `+ 1` that
    /// would wrap to an empty range.
    Range {
        start: usize,
        last: Option<usize>,
    },
    Name(String),
}

impl StepSelection {
    /// Every step.
    pub fn all() -> StepSelection {
        StepSelection::default()
    }

    /// True when every step is selected.
    pub fn is_all(&self) -> bool {
        self.items.is_empty()
    }

    /// The positions selected among steps named `names` (in trace order),
    /// ascending and without repeats; an error names a position or name
    /// the steps do not have.
    pub fn resolve(&self, names: &[String]) -> Result<Vec<usize>, String> {
        if self.is_all() {
            return Ok((0..names.len()).collect());
        }
        if names.is_empty() {
            return Err("the trace has no ProfilerStep annotations to select from".into());
        }
        let n = names.len();
        let mut picked = vec![false; n];
        for item in &self.items {
            match item {
                Item::Range { start, last } => {
                    let last = last.unwrap_or(n - 1);
                    if *start >= n || last >= n {
                        return Err(format!(
                            "step {} is out of range: the trace's steps are at positions 0 to {} \
                             (the `#` column of `lumos replay`), or by name {}",
                            if *start >= n { *start } else { last },
                            n - 1,
                            step_list(names)
                        ));
                    }
                    picked[*start..=last].iter_mut().for_each(|p| *p = true);
                }
                Item::Name(name) => match names.iter().position(|s| s == name) {
                    Some(i) => picked[i] = true,
                    None => {
                        return Err(format!(
                            "no step named {name:?}; the trace's steps are {}",
                            step_list(names)
                        ))
                    }
                },
            }
        }
        Ok((0..n).filter(|&i| picked[i]).collect())
    }
}

/// `A, B, C` or `A ... Z (N steps)`.
fn step_list(names: &[String]) -> String {
    match names {
        [] => "none".into(),
        [a] => a.clone(),
        [a, b] => format!("{a}, {b}"),
        [a, .., z] => format!("{a} ... {z} ({} steps)", names.len()),
    }
}

/// Why a `--steps` value cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepSelectionError(String);

impl fmt::Display for StepSelectionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StepSelectionError {}

impl FromStr for StepSelection {
    type Err = StepSelectionError;

    fn from_str(s: &str) -> Result<StepSelection, StepSelectionError> {
        let err = |m: String| StepSelectionError(m);
        let mut items = Vec::new();
        for part in s.split(',').map(str::trim) {
            if part.is_empty() {
                return Err(err(format!("empty step in {s:?}")));
            }
            items.push(parse_item(part).map_err(err)?);
        }
        Ok(StepSelection { items })
    }
}

fn parse_item(part: &str) -> Result<Item, String> {
    let num = |t: &str| -> Result<usize, String> {
        t.trim()
            .parse()
            .map_err(|_| format!("{t:?} is not a step position"))
    };
    if let Ok(i) = part.parse::<usize>() {
        return Ok(Item::Range {
            start: i,
            last: Some(i),
        });
    }
    let Some((a, b)) = part.split_once("..") else {
        return Ok(Item::Name(part.to_owned()));
    };
    let start = if a.trim().is_empty() { 0 } else { num(a)? };
    let empty = || format!("empty step range {part:?}");
    let last = match b.strip_prefix('=') {
        Some(b) => Some(num(b)?),
        None if b.trim().is_empty() => None,
        None => Some(num(b)?.checked_sub(1).ok_or_else(empty)?),
    };
    if last.is_some_and(|l| l < start) {
        return Err(empty());
    }
    Ok(Item::Range { start, last })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("ProfilerStep#{}", i + 10)).collect()
    }

    fn sel(s: &str) -> StepSelection {
        s.parse().unwrap()
    }

    #[test]
    fn positions_ranges_and_names() {
        let n = names(6);
        assert_eq!(sel("2..4").resolve(&n).unwrap(), vec![2, 3]);
        assert_eq!(sel("2..=4").resolve(&n).unwrap(), vec![2, 3, 4]);
        assert_eq!(sel("4..").resolve(&n).unwrap(), vec![4, 5]);
        assert_eq!(sel("..2").resolve(&n).unwrap(), vec![0, 1]);
        assert_eq!(sel("5, 1,1").resolve(&n).unwrap(), vec![1, 5]);
        assert_eq!(
            sel("ProfilerStep#12,ProfilerStep#10").resolve(&n).unwrap(),
            vec![0, 2]
        );
    }

    #[test]
    fn errors_name_the_problem() {
        let n = names(3);
        assert!(sel("3").resolve(&n).unwrap_err().contains("out of range"));
        assert!(sel("1..5").resolve(&n).unwrap_err().contains("step 4"));
        let e = sel("ProfilerStep#1").resolve(&n).unwrap_err();
        assert!(
            e.contains("ProfilerStep#10 ... ProfilerStep#12 (3 steps)"),
            "{e}"
        );
        assert!(sel("0")
            .resolve(&[])
            .unwrap_err()
            .contains("no ProfilerStep"));
        assert!("3..3".parse::<StepSelection>().is_err());
        assert!("1,,2".parse::<StepSelection>().is_err());
        assert!("a..b".parse::<StepSelection>().is_err());
        assert!("0..0".parse::<StepSelection>().is_err());
        // The largest positions are out of range, not an empty range (the
        // `+ 1` of an inclusive end once wrapped to 0).
        let max = usize::MAX;
        for s in [format!("0..={max}"), format!("{max}"), format!("{max}..")] {
            let e = sel(&s).resolve(&n).unwrap_err();
            assert!(
                e.contains(&format!("step {max} is out of range")),
                "{s}: {e}"
            );
        }
        let e = sel(&format!("1..{max}")).resolve(&n).unwrap_err();
        assert!(
            e.starts_with(&format!(
                "step {} is out of range: the trace's steps are at positions 0 to 2 ",
                max - 1
            )),
            "{e}"
        );
        assert!(StepSelection::all().resolve(&[]).unwrap().is_empty());
    }
}
