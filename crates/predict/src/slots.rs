//! Collective slots: the same collective in every step of a training loop.
//!
//! A trace that records no message size leaves a collective's size to be
//! inferred from its duration, and a kernel's duration includes the time it
//! waited for its slowest peer. The k-th all-reduce of each step is the same
//! gradient (bucket) in a steady loop, so its least-waiting occurrence over
//! the steps is the best measure of the transfer itself: the lower envelope
//! ([`ENVELOPE_PERCENTILE`](crate::models::ENVELOPE_PERCENTILE)) of the slot's durations, not each kernel's own
//! time.
//!
//! A slot is (kind, group, k-th collective of that kind and group in its
//! step), in the order the trace ran them. Where steps disagree on how many
//! collectives a (kind, group) has, the k-th ones need not be the same
//! tensor, and none of that (kind, group) gets an envelope.

use std::collections::BTreeMap;

use lumos_graph::Measured;

use crate::discover::{Role, Structure};
use crate::models::lower_envelope;

/// A collective's slot key without its position: (kind, group).
type Key = (u8, Vec<i64>);

/// One collective as slotting sees it: its step (`None` outside every
/// step), its (kind, group), its measured start (for the order within a
/// step) and its duration.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Occurrence {
    pub step: Option<u32>,
    pub key: Key,
    pub start_ns: i64,
    pub duration_ns: i64,
}

/// Per occurrence, the lower envelope of its slot's durations over the
/// steps; `None` outside steps, for a (kind, group) seen in fewer than two
/// steps, or one whose count differs between steps.
pub(crate) fn envelopes(occ: &[Occurrence]) -> Vec<Option<i64>> {
    // Within each (step, key), the occurrences in the order they ran.
    let mut by_step: BTreeMap<(&Key, u32), Vec<usize>> = BTreeMap::new();
    for (i, o) in occ.iter().enumerate() {
        if let Some(s) = o.step {
            by_step.entry((&o.key, s)).or_default().push(i);
        }
    }
    for v in by_step.values_mut() {
        v.sort_by_key(|&i| (occ[i].start_ns, i));
    }
    // Per key: the steps' sequences, which must all have one length.
    let mut by_key: BTreeMap<&Key, Vec<&Vec<usize>>> = BTreeMap::new();
    for ((k, _), v) in &by_step {
        by_key.entry(k).or_default().push(v);
    }
    let mut out = vec![None; occ.len()];
    for seqs in by_key.values() {
        let len = seqs[0].len();
        if seqs.len() < 2 || seqs.iter().any(|s| s.len() != len) {
            continue;
        }
        for k in 0..len {
            let ts: Vec<f64> = seqs.iter().map(|s| occ[s[k]].duration_ns as f64).collect();
            let env = lower_envelope(&ts).round() as i64;
            for s in seqs {
                out[s[k]] = Some(env);
            }
        }
    }
    out
}

/// Per collective of `s` (parallel to [`Structure::comms`]): the lower
/// envelope of its slot over the steps for a collective whose message size
/// the trace does not record; `None` for sized ones and where [`envelopes`]
/// gives none. `durations` are the tasks' traced durations.
pub(crate) fn unsized_envelopes(
    s: &Structure,
    measured: &Measured,
    durations: &[i64],
) -> Vec<Option<i64>> {
    let picked: Vec<(usize, Occurrence)> = s
        .comms
        .iter()
        .enumerate()
        .filter(|(_, c)| c.bytes.is_none())
        .filter_map(|(ci, c)| {
            let kind = c.kind? as u8;
            let t = c.task.idx();
            // A collective launched before the capture is the step
            // before the first's, whichever unit its kernel was filed with.
            let step = match s.role_of_task(c.task) {
                _ if !c.launched => None,
                Role::Outside => None,
                Role::Prologue { step } | Role::Pass { step, .. } | Role::Epilogue { step } => {
                    Some(step)
                }
            };
            Some((
                ci,
                Occurrence {
                    step,
                    key: (kind, c.ranks.clone()),
                    start_ns: measured.tasks.get(t).map_or(0, |sp| sp.start_ns),
                    duration_ns: durations[t],
                },
            ))
        })
        .collect();
    let occ: Vec<Occurrence> = picked.iter().map(|(_, o)| o.clone()).collect();
    let env = envelopes(&occ);
    let mut out = vec![None; s.comms.len()];
    for ((ci, _), e) in picked.iter().zip(env) {
        out[*ci] = e;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn o(step: Option<u32>, kind: u8, start: i64, dur: i64) -> Occurrence {
        Occurrence {
            step,
            key: (kind, vec![0, 1]),
            start_ns: start,
            duration_ns: dur,
        }
    }

    #[test]
    fn each_slot_takes_its_least_waiting_occurrence() {
        // Three steps of two all-reduces (a small one, a large one); the
        // last step waited for a peer on both.
        let occ = vec![
            o(Some(0), 0, 10, 5),
            o(Some(0), 0, 20, 270),
            o(Some(1), 0, 110, 6),
            o(Some(1), 0, 120, 272),
            o(Some(2), 0, 220, 996),
            o(Some(2), 0, 210, 433),
        ];
        let env = envelopes(&occ);
        // Step 2 ran its small one (433) first: order is by start, not by
        // position in the list.
        assert_eq!(
            env,
            vec![Some(5), Some(270), Some(5), Some(270), Some(270), Some(5)]
        );
    }

    #[test]
    fn no_envelope_outside_steps_alone_or_where_steps_disagree() {
        let occ = vec![
            // Outside every step.
            o(None, 0, 0, 50),
            // Kind 1: in one step only.
            o(Some(0), 1, 10, 7),
            // Kind 2: one in step 0, two in step 1.
            o(Some(0), 2, 10, 7),
            o(Some(1), 2, 110, 7),
            o(Some(1), 2, 120, 9),
        ];
        assert_eq!(envelopes(&occ), vec![None; 5]);
        assert!(envelopes(&[]).is_empty());
    }

    #[test]
    fn groups_are_slotted_apart() {
        let mut a = o(Some(0), 0, 10, 8);
        a.key.1 = vec![0, 2];
        let mut b = o(Some(1), 0, 110, 4);
        b.key.1 = vec![0, 2];
        let occ = vec![a, o(Some(0), 0, 11, 30), b, o(Some(1), 0, 111, 20)];
        assert_eq!(envelopes(&occ), vec![Some(4), Some(20), Some(4), Some(20)]);
    }
}
