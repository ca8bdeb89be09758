//! Per-host clock offsets on a synthesized job over four hosts whose
//! clocks are off by up to a quarter of a second: one offset per host,
//! recovered from the collective ends, and a joint replay that is the
//! replay of the same job on one clock.

use lumos_graph::{assemble, Job, RankInput};
use lumos_report::{job_report, replay_job};
use lumos_sim::SimOptions;
use lumos_synth::{write_job, HostClocks, ModelPreset, Parallelism, Ranks, SynthConfig};
use lumos_testkit::TempDir;

/// Per host of two ranks: how far its clock runs ahead, ns.
const SKEW_NS: [i64; 4] = [0, 3_700_000, -12_300_000, 250_000_000];

/// The ranks of an 8-rank job (TP 2 inside each host, DP 4 across hosts),
/// written with `hosts`.
fn job(name: &str, hosts: Option<HostClocks>) -> Job {
    let mut cfg = SynthConfig::new(
        ModelPreset::preset("gpt-tiny").unwrap(),
        Parallelism::new(2, 1, 4, 2),
        lumos_models::GpuSpec::h100(),
    );
    cfg.ranks = Ranks::All;
    cfg.hosts = hosts;
    let dir = TempDir::new(name);
    let inputs: Vec<RankInput> = write_job(&cfg, dir.path())
        .unwrap()
        .iter()
        .map(|p| RankInput::from_trace(&lumos_trace::read_path(p).unwrap()))
        .collect();
    assemble(inputs).unwrap()
}

fn skewed() -> HostClocks {
    HostClocks {
        ranks_per_host: 2,
        skew_ns: SKEW_NS.to_vec(),
    }
}

#[test]
fn each_host_gets_one_offset_recovered_from_its_ranks_collectives() {
    let job = job("host-clocks-skewed", Some(skewed()));
    let c = &job.clock;
    assert!(c.unaligned.is_empty(), "{:?}", c.unaligned);
    assert_eq!(c.hosts.len(), 4);
    for (k, h) in c.hosts.iter().enumerate() {
        assert_eq!(h.host, format!("node{k}"));
        assert_eq!(h.ranks, [2 * k as u32, 2 * k as u32 + 1]);
        assert!(
            (h.offset_ns - SKEW_NS[k]).abs() <= 1_000,
            "{}: {} ns, skew {}",
            h.host,
            h.offset_ns,
            SKEW_NS[k]
        );
        // The reference host's offset is 0 by definition; every other
        // host's is the median over both its ranks' collectives.
        assert_eq!(h.evidence == 0, k == 0, "{h:?}");
        for &p in &h.ranks {
            assert_eq!(c.offsets_ns[p as usize], h.offset_ns);
            assert!(
                c.residual_ns[p as usize].abs() <= 1_000,
                "{:?}",
                c.residual_ns
            );
        }
    }
    assert!(c.raw_end_spread_ns.iter().any(|&s| s > 200_000_000));
    assert!(
        c.end_spread_ns.iter().all(|&s| s <= 1_000),
        "{:?}",
        c.end_spread_ns
    );

    // The report names the hosts, their ranks, offsets and residuals.
    let v = serde_json::to_value(job_report(&job)).unwrap();
    let hosts = v["clock"]["hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), 4);
    assert_eq!(hosts[3]["host"], "node3");
    assert_eq!(hosts[3]["ranks"], serde_json::json!([6, 7]));
    let offset = hosts[3]["offset_us"].as_f64().unwrap();
    assert!((offset - 250_000.0).abs() <= 1.0, "{offset}");
    assert_eq!(hosts[3]["residual_us"].as_array().unwrap().len(), 2);
    assert!(hosts[3]["collective_ends"].as_u64().unwrap() > 0);
}

#[test]
fn a_job_over_skewed_hosts_replays_as_on_one_clock() {
    let plain = job("host-clocks-plain", None);
    assert!(plain.clock.hosts.is_empty());
    let skewed = job("host-clocks-replay", Some(skewed()));
    let opts = SimOptions::default();
    let a = replay_job(&plain, &opts, &[], false).unwrap();
    let b = replay_job(&skewed, &opts, &[], false).unwrap();
    let steps = |o: &lumos_report::ReplayOutput| -> Vec<f64> {
        o.job
            .as_ref()
            .unwrap()
            .steps
            .as_ref()
            .unwrap()
            .iter()
            .map(|s| s.replayed_us)
            .collect()
    };
    let (sa, sb) = (steps(&a), steps(&b));
    assert!(!sa.is_empty());
    assert_eq!(sa.len(), sb.len());
    for (x, y) in sa.iter().zip(&sb) {
        assert!((x - y).abs() <= 1.0, "{sa:?} {sb:?}");
    }
}

#[test]
fn ranks_of_one_host_share_its_clock_whatever_its_skew() {
    // Every rank on node0, the reference rank's host: offset 0 for all,
    // however far node0's clock is off.
    let job = job(
        "host-clocks-mates",
        Some(HostClocks {
            ranks_per_host: 8,
            skew_ns: vec![5_000_000],
        }),
    );
    assert_eq!(job.clock.hosts.len(), 1);
    assert!(job.clock.offsets_ns.iter().all(|&o| o == 0));
    assert_eq!(job.clock.hosts[0].ranks, (0..8).collect::<Vec<u32>>());
}
