//! A trace's prediction input made of its replay
//! (`prediction_input_of_replay`, what `lumos report` with what-if flags
//! uses so that it reads the file once) against the input read from the
//! file (`prediction_input`, what `lumos predict` uses): the same name,
//! graph, measured times and context, on every corpus trace, and the
//! replay's warnings of the file.

use lumos_report::{
    prediction_input, prediction_input_of_replay, replay_path_with_meta, trace_warnings,
};
use lumos_sim::SimOptions;

#[test]
fn the_input_made_of_a_replay_is_the_input_read_from_the_file() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let report = lumos_report::AnalysisOptions::default();
    for path in corpus.traces("") {
        let read = prediction_input(&path).unwrap();
        let sim = (&SimOptions::default(), &[][..]);
        let (replayed, meta) = replay_path_with_meta(&path, sim, &report, &|_| {})
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let what = path.display();
        // The warnings a prediction states are the replay's of the file,
        // less the simulation's own.
        let replay_warned = trace_warnings(&replayed.meta.warnings, &replayed.build);
        assert_eq!(read.warnings, replay_warned, "{what}: warnings");
        let (read, made) = (read.input, prediction_input_of_replay(replayed, &meta));
        assert_eq!(made.name, read.name, "{what}");
        assert_eq!(made.ctx, read.ctx, "{what}");
        assert_eq!(
            format!("{:?}", made.graph),
            format!("{:?}", read.graph),
            "{what}: graph"
        );
        assert_eq!(
            format!("{:?}", made.measured),
            format!("{:?}", read.measured),
            "{what}: measured"
        );
    }
}

/// A job's ranks lent to its prediction (`prediction_candidates_of`, what
/// `lumos report` of a job with what-if flags uses so that it reads the
/// files once) make the prediction its files read one by one make
/// (`prediction_input`, what `lumos predict` uses); a job whose stages run
/// one layer per pass, none of whose ranks discovery settles alone, lends
/// nothing (every rank would be copied).
#[test]
fn a_jobs_ranks_lent_predict_as_its_files_read_again() {
    // TP2 PP2 DP2 of GPT tiny, then PP4 DP2 over four layers.
    for (layout, layers, lends) in [([2, 2, 2, 2], None, true), ([1, 4, 2, 2], Some(4), false)] {
        let dir = lumos_testkit::TempDir::new("lent-ranks");
        let ranks = layout[0] * layout[1] * layout[2];
        // Highest rank first, so that ranks standing for their stage are
        // replaced as lower ones come.
        let files: Vec<_> = (0..ranks)
            .rev()
            .map(|r| {
                let f = dir.join(format!("rank{r}.json"));
                std::fs::write(&f, synthesized_rank(layout, layers, r)).unwrap();
                f
            })
            .collect();
        let prepared: Vec<_> = (files.iter())
            .map(|f| lumos_store::prepare(f).unwrap())
            .collect();
        let metas: Vec<_> = prepared.iter().map(lumos_store::Prepared::meta).collect();
        let lent: Vec<_> = (prepared.iter())
            .map(|p| match p {
                lumos_store::Prepared::Built(b) => b.rank.clone().unwrap(),
                lumos_store::Prepared::Stored(_) => unreachable!("traces only"),
            })
            .collect();
        let candidates = lumos_report::prediction_candidates_of(&lent, &metas);
        assert_eq!(candidates.is_some(), lends, "{layout:?}");
        let Some(candidates) = candidates else {
            continue;
        };
        // One rank per stage held (copied), the others left out.
        assert_eq!((candidates.len(), candidates.held()), (8, 2));
        let mut read_again = lumos_predict::Candidates::new();
        for f in &files {
            let input = prediction_input(f).unwrap().input;
            read_again.push(lumos_predict::Discovered::new(input));
        }
        let [lent, read] = [candidates, read_again].map(|c| {
            let base = lumos_predict::Baseline::of(c).unwrap();
            let pred = base.identity().with_dp(4).unwrap();
            let (report, _) = lumos_report::predict(&base, &pred).unwrap();
            serde_json::to_string(&report).unwrap()
        });
        assert_eq!(lent, read, "{layout:?}");
        assert!(lent.contains("6 of 8 inputs left out"), "{lent}");
    }
}

/// Rank `rank` of GPT tiny on `[tp, pp, dp, micro-batches]`, with `layers`
/// layers in all (the preset's when `None`), as JSON text.
fn synthesized_rank(layout: [usize; 4], layers: Option<usize>, rank: usize) -> String {
    let [tp, pp, dp, m] = layout;
    let mut preset = lumos_synth::ModelPreset::preset("gpt-tiny").unwrap();
    if let Some(l) = layers {
        preset.layers = l;
    }
    let parallel = lumos_synth::Parallelism::new(tp, pp, dp, m);
    let cfg = lumos_synth::SynthConfig::new(preset, parallel, lumos_models::GpuSpec::h100());
    lumos_synth::synthesize_rank(&cfg, rank).unwrap()
}
