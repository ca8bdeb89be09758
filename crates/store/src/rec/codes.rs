//! The one-byte codes the format gives the model's enumerations. Encoding
//! matches every variant (a new variant does not compile until it has a
//! code); decoding rejects unknown codes as corruption. Codes are part of
//! the format: never renumber, only add.

use lumos_graph::{Anchor, DepKind, Rule, TaskKind};
use lumos_trace::{RankSource, SkipReason};

use super::Bad;

macro_rules! codes {
    ($ty:ty, $enc:ident, $dec:ident, $what:literal, [$($v:path = $c:literal),* $(,)?]) => {
        pub(crate) fn $enc(v: $ty) -> u8 {
            match v {
                $($v => $c,)*
            }
        }
        pub(crate) fn $dec(c: u8) -> Result<$ty, Bad> {
            match c {
                $($c => Ok($v),)*
                _ => Err(Bad(format!(concat!("unknown ", $what, " code {}"), c))),
            }
        }
    };
}

codes!(
    TaskKind,
    task_kind,
    task_kind_of,
    "task kind",
    [
        TaskKind::CpuOp = 0,
        TaskKind::Annotation = 1,
        TaskKind::Runtime = 2,
        TaskKind::Kernel = 3,
        TaskKind::Memcpy = 4,
        TaskKind::Memset = 5,
    ]
);

codes!(
    DepKind,
    dep_kind,
    dep_kind_of,
    "dependency kind",
    [
        DepKind::IntraThread = 0,
        DepKind::InterThread = 1,
        DepKind::Launch = 2,
        DepKind::IntraStream = 3,
        DepKind::InterStream = 4,
        DepKind::Sync = 5,
        DepKind::Collective = 6,
    ]
);

codes!(
    Anchor,
    anchor,
    anchor_of,
    "anchor",
    [Anchor::End = 0, Anchor::Start = 1]
);

codes!(
    Rule,
    rule,
    rule_of,
    "rule",
    [
        Rule::CudaSyncEvent = 0,
        Rule::LaunchSequence = 1,
        Rule::ObservedWait = 2,
        Rule::LastOtherStream = 3,
        Rule::NamedCall = 4,
        Rule::EndsBeforeReturn = 5,
        Rule::LongCallEndsAfterGpu = 6,
        Rule::PollingLoop = 7,
        Rule::GapAfterOtherThread = 8,
        Rule::CollectiveInput = 9,
        Rule::CollectiveConsumer = 10,
        Rule::ImpliedCollectiveInput = 11,
        Rule::ImpliedCollectiveConsumer = 12,
        Rule::FullLaunchQueue = 13,
    ]
);

codes!(
    RankSource,
    rank_source,
    rank_source_of,
    "rank source",
    [
        RankSource::DistributedInfo = 0,
        RankSource::FileName = 1,
        RankSource::Default = 2,
    ]
);

codes!(
    SkipReason,
    skip_reason,
    skip_reason_of,
    "skip reason",
    [
        SkipReason::NotAnObject = 0,
        SkipReason::BadFieldType = 1,
        SkipReason::MissingPhase = 2,
        SkipReason::MissingTs = 3,
        SkipReason::MissingDur = 4,
        SkipReason::NegativeDur = 5,
        SkipReason::TimeOutOfRange = 6,
        SkipReason::MissingName = 7,
        SkipReason::MissingPidTid = 8,
        SkipReason::UnknownCategory = 9,
        SkipReason::NotModeled = 10,
        SkipReason::NotATask = 11,
        SkipReason::UnsupportedPhase = 12,
        SkipReason::BadFlow = 13,
        SkipReason::BeginEnd = 14,
        SkipReason::OtherPhase = 15,
    ]
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_decodes_to_its_variant() {
        for k in TaskKind::ALL {
            assert_eq!(task_kind_of(task_kind(k)).unwrap(), k);
        }
        for k in DepKind::ALL {
            assert_eq!(dep_kind_of(dep_kind(k)).unwrap(), k);
        }
        for c in 0..=255u8 {
            // Decoding is the inverse of encoding wherever it succeeds.
            if let Ok(r) = rule_of(c) {
                assert_eq!(rule(r), c);
            }
            if let Ok(r) = skip_reason_of(c) {
                assert_eq!(skip_reason(r), c);
            }
            if let Ok(r) = rank_source_of(c) {
                assert_eq!(rank_source(r), c);
            }
            if let Ok(a) = anchor_of(c) {
                assert_eq!(anchor(a), c);
            }
        }
        assert!(task_kind_of(6).is_err());
    }
}
