//! Per-host clock offsets on the DLRM job: its traces name no host, so
//! every rank keeps an offset of its own; named as two hosts of four ranks
//! with one host's clock moved, each host gets one offset from all its
//! ranks' collective ends.

use lumos_graph::*;
use lumos_trace::read_path;

/// The 8 DLRM ranks' graphs, or `None` when the corpus is absent.
fn dlrm() -> Option<Vec<RankGraph>> {
    let corpus = lumos_testkit::corpus()?;
    let rank = |r: u32| corpus.path(&format!("multi-rank/dlrm-8xv100/rank{r}.json.gz"));
    Some(
        (0..8)
            .map(|r| rank_graph(&read_path(&rank(r)).unwrap()).0)
            .collect(),
    )
}

#[test]
fn dlrm_names_no_host_so_each_rank_keeps_its_own_offset() {
    let Some(ranks) = dlrm() else {
        return;
    };
    assert!(ranks.iter().all(|r| r.host.is_none()));
    let m = match_collectives(&ranks);
    let c = align_clocks(&ranks, &m);
    assert!(c.hosts.is_empty());
    // One clock in fact (the corpus README): the per-rank offsets are the
    // 1 us timestamp resolution, and so are the residuals.
    assert!(
        c.offsets_ns.iter().all(|o| o.abs() <= 2_000),
        "{:?}",
        c.offsets_ns
    );
    assert!(c.offsets_ns.iter().any(|&o| o != 0));
    assert!(
        c.residual_ns.iter().all(|r| r.abs() <= 10_000),
        "{:?}",
        c.residual_ns
    );
}

#[test]
fn two_named_hosts_get_one_offset_each_from_all_their_ranks() {
    let Some(mut ranks) = dlrm() else {
        return;
    };
    // Ranks 4-7 on host b, whose clock runs 5.123 ms ahead.
    for (p, r) in ranks.iter_mut().enumerate() {
        r.host = Some(if p < 4 { "a" } else { "b" }.to_owned());
        if p >= 4 {
            r.clock_base_ns += 5_123_000;
        }
    }
    let m = match_collectives(&ranks);
    let c = align_clocks(&ranks, &m);
    assert!(c.unaligned.is_empty());
    assert_eq!(c.hosts.len(), 2);
    let (a, b) = (&c.hosts[0], &c.hosts[1]);
    assert_eq!(
        (a.host.as_str(), a.ranks.as_slice()),
        ("a", &[0, 1, 2, 3][..])
    );
    assert_eq!(
        (b.host.as_str(), b.ranks.as_slice()),
        ("b", &[4, 5, 6, 7][..])
    );
    assert_eq!((a.offset_ns, a.evidence), (0, 0));
    // Every end of all four ranks of b against a's: 8 collectives x 4.
    assert_eq!(b.evidence, 32);
    assert!((b.offset_ns - 5_123_000).abs() <= 2_000, "{}", b.offset_ns);
    assert_eq!(&c.offsets_ns[..4], &[0; 4]);
    assert!(c.offsets_ns[4..].iter().all(|&o| o == b.offset_ns));
    // The host's one offset fits each of its ranks within the end noise.
    assert!(
        c.residual_ns.iter().all(|r| r.abs() <= 10_000),
        "{:?}",
        c.residual_ns
    );
    assert!(
        c.end_spread_ns.iter().all(|&s| s <= 10_000),
        "{:?}",
        c.end_spread_ns
    );

    // The merged job places every rank where the unshifted job does,
    // within the end noise that per-rank offsets carried.
    let plain = dlrm().unwrap();
    let pm = match_collectives(&plain);
    let (j0, _, w0) = merge(&plain, &pm, &align_clocks(&plain, &pm));
    let (j1, _, w1) = merge(&ranks, &m, &c);
    assert!(w0.is_empty() && w1.is_empty(), "{w0:?} {w1:?}");
    for (x, y) in j0.ranks.iter().zip(&j1.ranks) {
        assert!((x.start_ns - y.start_ns).abs() <= 3_000, "{x:?} {y:?}");
    }
}

#[test]
fn a_rank_with_no_collective_of_its_own_takes_its_hosts_clock() {
    let Some(mut ranks) = dlrm() else {
        return;
    };
    // Rank 6's clock is off and none of its collectives matched: alone it
    // cannot be aligned; on host b with rank 7 it takes b's offset.
    for p in [6, 7] {
        ranks[p].clock_base_ns += 9_000_000;
        ranks[p].host = Some("b".into());
    }
    let mut m = match_collectives(&ranks);
    for s in &mut m.sets {
        s.members.retain(|mb| mb.rank_pos != 6);
    }
    let c = align_clocks(&ranks, &m);
    assert!(c.unaligned.is_empty(), "{:?}", c.unaligned);
    assert_eq!(c.offsets_ns[6], c.offsets_ns[7]);
    assert!(
        (c.offsets_ns[6] - 9_000_000).abs() <= 2_000,
        "{:?}",
        c.offsets_ns
    );
    // Without the host it is unaligned.
    ranks[6].host = None;
    let c = align_clocks(&ranks, &m);
    assert_eq!(c.unaligned, [6]);
}
