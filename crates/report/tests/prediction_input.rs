//! A trace's prediction input made of its replay
//! (`prediction_input_of_replay`, what `lumos report` with what-if flags
//! uses so that it reads the file once) against the input read from the
//! file (`prediction_input`, what `lumos predict` uses): the same name,
//! graph, measured times and context, on every corpus trace.

use lumos_report::{prediction_input, prediction_input_of_replay, replay_path_with_meta};
use lumos_sim::SimOptions;

#[test]
fn the_input_made_of_a_replay_is_the_input_read_from_the_file() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let report = lumos_report::AnalysisOptions::default();
    for path in corpus.traces("") {
        let (read, _) = prediction_input(&path).unwrap();
        let sim = (&SimOptions::default(), &[][..]);
        let (replayed, meta) = replay_path_with_meta(&path, sim, &report, &|_| {})
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let made = prediction_input_of_replay(replayed, &meta);
        let what = path.display();
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
