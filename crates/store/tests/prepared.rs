//! `prepare` and `sort`: the ranks lent to tell whether inputs are one job
//! go to the job, or back to their own inputs, whatever lies between them
//! (errors, `.lgraph` files).

use std::path::{Path, PathBuf};

use lumos_store::{ingest_file, prepare, sort, InputError, JobChoice, Prepared, Sorted};
use lumos_testkit::{corpus, TempDir};

/// Two unrelated ranks of world size 2, with an unreadable file and a
/// compact graph of a third trace between them.
fn inputs(dir: &Path) -> Option<Vec<PathBuf>> {
    let c = corpus()?;
    let lgraph = dir.join("event-sync.lgraph");
    ingest_file(&c.path("micro/a100-event-sync.json.gz"), &lgraph).unwrap();
    Some(vec![
        c.path("single-rank/v100-ddp-rank1of2-allreduce.json.gz"),
        dir.join("missing.json"),
        lgraph,
        c.path("single-rank/a100-ddp-rank0of2-event-record.json.gz"),
    ])
}

fn prepared(files: &[PathBuf]) -> Vec<Result<Prepared, InputError>> {
    files.iter().map(|f| prepare(f)).collect()
}

/// The file each input's rank came from (`None` for an error or a rank
/// lent out), and whether it is a compact file.
fn owners(read: &[Result<Prepared, InputError>]) -> Vec<Option<(PathBuf, bool)>> {
    read.iter()
        .map(|r| match r.as_ref().ok()? {
            Prepared::Built(b) => {
                let rank = b.rank.as_ref()?;
                assert_eq!(
                    rank.meta.path, b.facts.path,
                    "a rank given back to another input"
                );
                Some((rank.meta.path.clone(), false))
            }
            Prepared::Stored(s) => Some((s.facts.path.clone(), true)),
        })
        .collect()
}

#[test]
fn ranks_go_back_to_their_inputs_when_the_files_are_not_one_job() {
    let dir = TempDir::new("store-prepared-apart");
    let Some(files) = inputs(&dir) else { return };
    for choice in [JobChoice::Detect, JobChoice::Never] {
        let Sorted::Apart(read, detected) = sort(prepared(&files), choice) else {
            panic!("{choice:?}: two unrelated ranks are not one job");
        };
        // Both record world size 2 and share no collective: said so when
        // asked to tell, not when told to take them apart.
        let note = detected.note();
        assert_eq!(note.is_some(), choice == JobChoice::Detect, "{note:?}");
        let got = owners(&read);
        assert_eq!(got[0], Some((files[0].clone(), false)), "{choice:?}");
        assert!(read[1].is_err());
        assert!(matches!(&got[2], Some((_, true))), "{choice:?}");
        assert_eq!(got[3], Some((files[3].clone(), false)), "{choice:?}");
    }
}

#[test]
fn a_job_takes_every_rank_in_order() {
    let dir = TempDir::new("store-prepared-job");
    let Some(files) = inputs(&dir) else { return };
    let Sorted::Job(ranks, read) = sort(prepared(&files), JobChoice::Always) else {
        panic!("--job takes the inputs as one job");
    };
    // One rank per input read, in order; the traces' ranks were moved out.
    let paths: Vec<&Path> = ranks.iter().map(|r| r.meta.path.as_path()).collect();
    assert_eq!(paths.len(), 3);
    assert_eq!(paths[0], files[0]);
    assert_eq!(paths[2], files[3]);
    let left = owners(&read);
    assert_eq!(left[0], None);
    assert_eq!(left[3], None);
    assert!(matches!(&left[2], Some((_, true))));
}
