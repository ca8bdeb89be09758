//! `lumos report` as a person sees it: the page of a corpus trace and of a
//! corpus job rendered by headless Chromium (Debian's package), whose
//! screenshot must not be blank and whose DOM must hold the charts and
//! tables; and the command's exit codes and atomic output.
//!
//! Without a `chromium` on the PATH the browser checks skip with one line,
//! unless `LUMOS_REQUIRE_CHROMIUM=1` (`.ci/run` installs it and sets it).
#![allow(clippy::print_stdout, clippy::print_stderr)] // a test: printing is its job

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{lumos, run_ok};
use lumos_testkit::TempDir;

/// The variable that turns a missing browser from a skip into a failure.
const REQUIRE_CHROMIUM: &str = "LUMOS_REQUIRE_CHROMIUM";

fn report(args: &[&str], paths: &[&Path], html: &Path) -> Output {
    lumos()
        .arg("report")
        .args(args)
        .args(paths)
        .arg("-o")
        .arg(html)
        .output()
        .unwrap()
}

fn written(out: &Output, html: &Path) -> String {
    assert!(
        out.status.success(),
        "lumos report failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(&html.display().to_string()), "{stdout}");
    std::fs::read_to_string(html).unwrap()
}

/// Nothing in the page may need the network or another file.
fn assert_self_contained(page: &str) {
    // The SVG namespace is a name, not something fetched.
    let page = page.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
    for bad in [
        "<script", "<link", "src=", "@import", "url(", "http://", "https://",
    ] {
        assert!(!page.contains(bad), "the page holds {bad:?}");
    }
}

/// `chromium`, or `None` (with one line on stderr) when absent and not
/// required.
fn chromium() -> Option<&'static str> {
    let found = Command::new("chromium")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if found {
        return Some("chromium");
    }
    let required = std::env::var_os(REQUIRE_CHROMIUM).is_some_and(|v| !v.is_empty());
    assert!(
        !required,
        "{REQUIRE_CHROMIUM} is set but `chromium` is not on the PATH"
    );
    eprintln!("skipping the browser checks: no `chromium` (apt-get install chromium)");
    None
}

/// Runs headless Chromium on `page` with `args`; its stdout.
fn browse(browser: &str, profile: &Path, page: &Path, args: &[String]) -> Vec<u8> {
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Read while it runs: a page's DOM larger than the pipe's buffer would
    // otherwise block it until the deadline.
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        std::io::Read::read_to_end(&mut stdout, &mut out).map(|_| out)
    });
    let deadline = Instant::now() + Duration::from_secs(180);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("chromium did not finish in 180 s on {}", page.display());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    reader.join().unwrap().unwrap()
}

/// An RGB image.
struct Image {
    width: usize,
    height: usize,
    rgb: Vec<[u8; 3]>,
}

fn decode(path: &Path) -> Image {
    let mut decoder = png::Decoder::new(std::fs::File::open(path).unwrap());
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    let rgb = buf[..info.buffer_size()]
        .chunks(channels)
        .map(|p| match channels {
            1 | 2 => [p[0]; 3],
            _ => [p[0], p[1], p[2]],
        })
        .collect();
    Image {
        width: info.width as usize,
        height: info.height as usize,
        rgb,
    }
}

impl Image {
    /// Share of the pixels in rows `rows` (fractions of the height) that
    /// are not the white background.
    fn ink(&self, rows: std::ops::Range<f64>) -> f64 {
        let (a, b) = (
            (rows.start * self.height as f64) as usize,
            (rows.end * self.height as f64) as usize,
        );
        let px = &self.rgb[a * self.width..b * self.width];
        let ink = px.iter().filter(|p| p.iter().any(|&c| c < 235)).count();
        ink as f64 / px.len().max(1) as f64
    }

    /// Distinct colors, coarsely: charts add more than black text.
    fn colors(&self) -> usize {
        let mut seen: Vec<[u8; 3]> = self.rgb.iter().map(|p| p.map(|c| c / 32)).collect();
        seen.sort_unstable();
        seen.dedup();
        seen.len()
    }
}

/// Renders `page` and checks what a person would see: a screenshot with
/// ink in every band, charts (SVG) and the tables `tables` in the DOM.
fn check_in_browser(page: &Path, dir: &Path, svgs: usize, tables: &[&str]) {
    let Some(browser) = chromium() else { return };
    let profile = dir.join("chromium-profile");
    let dom = String::from_utf8(browse(browser, &profile, page, &["--dump-dom".into()])).unwrap();
    let n_svg = dom.matches("<svg").count();
    assert!(n_svg >= svgs, "{n_svg} charts in the DOM, expected {svgs}");
    for id in tables {
        assert!(dom.contains(&format!("id=\"{id}\"")), "no #{id} in the DOM");
    }
    let shot = dir.join("shot.png");
    browse(
        browser,
        &profile,
        page,
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1280,2400".into(),
        ],
    );
    let img = decode(&shot);
    assert_eq!((img.width, img.height), (1280, 2400));
    for band in [0.0..0.15, 0.15..0.4, 0.4..0.7, 0.7..1.0] {
        let ink = img.ink(band.clone());
        assert!(
            ink > 0.01,
            "the screenshot is blank in rows {band:?}: {ink:.4} ink"
        );
    }
    assert!(
        img.colors() >= 8,
        "{} colors: no charts drawn?",
        img.colors()
    );
}

fn corpus_file(rel: &str) -> Option<PathBuf> {
    Some(lumos_testkit::corpus()?.path(rel))
}

#[test]
fn the_report_of_a_trace_with_a_what_if_opens_in_a_browser() {
    let Some(trace) = corpus_file("single-rank/mi300x-resnet-ddp-rank0of8.json.gz") else {
        return;
    };
    let dir = TempDir::new("cli-report-trace");
    let html = dir.join("trace.html");
    let out = report(&["--scale-kernels", "class:compute=0.5"], &[&trace], &html);
    let page = written(&out, &html);
    assert_self_contained(&page);
    for section in [
        "id=\"verdict\"",
        "id=\"steps-table\"",
        "id=\"kernels-table\"",
        "id=\"what-if\"",
        "id=\"findings-table\"",
        "predicted ms",
    ] {
        assert!(page.contains(section), "no {section}");
    }
    assert!(!page.contains("id=\"waiting\""), "one trace has no peers");
    check_in_browser(
        &html,
        &dir,
        3,
        &["steps-table", "kernels-table", "what-if-table"],
    );
}

/// The page's verdict agrees with `lumos replay`'s critical path per step
/// and with the what-if the tour makes: the recsys rank's GPU computes 65%
/// of its window, but its path runs mostly through the CPU and compute
/// kernels twice as fast save about 1% of its step. The page said
/// "compute-bound".
#[test]
fn a_step_bound_by_the_cpu_reads_cpu_bound_on_the_page() {
    let Some(trace) = corpus_file("single-rank/a100-recsys-rank3of8.json.gz") else {
        return;
    };
    let dir = TempDir::new("cli-report-verdict");
    let html = dir.join("recsys.html");
    let page = written(&report(&[], &[&trace], &html), &html);
    let verdict = page
        .split("id=\"verdict\"><b>")
        .nth(1)
        .and_then(|s| s.split("</b>").next())
        .expect("a verdict");
    assert_eq!(verdict, "CPU/launch-bound");
    let replay = run_ok(lumos().arg("replay").arg(&trace));
    let replay = String::from_utf8_lossy(&replay.stdout);
    assert!(
        replay.contains("CPU-bound") && !replay.contains("GPU-bound"),
        "{replay}"
    );
}

#[test]
fn the_report_of_a_job_shows_who_waited() {
    let Some(dlrm) = corpus_file("multi-rank/dlrm-8xv100") else {
        return;
    };
    let dir = TempDir::new("cli-report-job");
    let html = dir.join("job.html");
    let page = written(&report(&[], &[&dlrm], &html), &html);
    assert_self_contained(&page);
    assert!(page.contains("job of 8 ranks"));
    assert!(page.contains("id=\"waiting-table\""));
    assert!(page.contains("longest step on rank"));
    // Steps, busy timeline, critical path, two heat maps.
    check_in_browser(
        &html,
        &dir,
        5,
        &["steps-table", "kernels-table", "waiting-table"],
    );
}

#[test]
fn the_report_of_a_large_job_bins_its_heat_maps() {
    // 72 ranks: 64 heat map rows, eight of them the mean of two
    // consecutive ranks, where a row per rank of 4,096 would be a chart
    // 115,000 pixels tall; the table keeps a row per rank.
    let dir = TempDir::new("cli-report-large-job");
    let job = dir.join("job");
    run_ok(
        lumos()
            .args(["synth", "--model", "gpt-tiny", "--pp", "2", "--dp", "36"])
            .args(["--ranks", "all", "--out"])
            .arg(&job),
    );
    let html = dir.join("job.html");
    let page = written(&report(&[], &[&job], &html), &html);
    assert_self_contained(&page);
    assert!(page.contains("job of 72 ranks"));
    assert!(page.contains("the mean of the consecutive ranks of each row"));
    for label in ["rank 0", "ranks 7, 8", "ranks 70, 71"] {
        assert_eq!(
            page.matches(&format!(">\n{label}\n<")).count(),
            2,
            "{label}"
        );
    }
    assert!(!page.contains(">\nrank 8\n<"));
    assert_eq!(page.matches(">\nranks ").count(), 2 * 8);
    let table = &page[page.find("id=\"waiting-table\"").unwrap()..];
    let table = &table[..table.find("</table>").unwrap()];
    assert_eq!(table.matches("<tr><td>").count(), 72);
    check_in_browser(&html, &dir, 5, &["steps-table", "waiting-table"]);
}

/// Asserts that the what-if section of `page` shows the mean steps and
/// the note on the ranks left out of `lumos predict ARGS --json JOB`
/// (`left_out`: how that note starts).
fn assert_what_if_is_lumos_predicts(page: &str, args: &[&str], job: &[PathBuf], left_out: &str) {
    let p = common::lumos_json(args, job);
    let at = page.find("id=\"what-if\"").expect("a what-if section");
    let what_if = &page[at..];
    let mean = |k: &str| format!("{:.3}", p[k].as_f64().unwrap());
    let row = format!(
        "<td>{}</td><td>{}</td><td>{}</td>",
        mean("mean_measured_ms"),
        mean("mean_replayed_ms"),
        mean("mean_predicted_ms")
    );
    assert!(what_if.contains(&row), "no {row} in the what-if section");
    let note = p["assumptions"][0].as_str().unwrap();
    assert!(note.starts_with(left_out), "{note}");
    assert!(what_if.contains(note), "the page lacks {note:?}");
}

#[test]
fn the_what_if_of_a_job_is_lumos_predicts() {
    // A transformer job's ranks are lent to the prediction before the
    // page's joint replay takes them (one copied per stage), from traces
    // and from compact graphs: the same numbers and notes as `lumos
    // predict` of the job.
    let dir = TempDir::new("cli-report-job-what-if");
    let traces = dir.join("traces");
    let synth = lumos()
        .args([
            "synth", "--model", "gpt-tiny", "--tp", "2", "--pp", "2", "--dp", "2",
        ])
        .args(["--microbatches", "4", "--ranks", "all", "--out"])
        .arg(&traces)
        .output()
        .unwrap();
    assert!(
        synth.status.success(),
        "{}",
        String::from_utf8_lossy(&synth.stderr)
    );
    let graphs = dir.join("graphs");
    let ingest = lumos()
        .arg("ingest")
        .arg(&traces)
        .arg("-o")
        .arg(&graphs)
        .output();
    assert!(ingest.unwrap().status.success());
    for job in [&traces, &graphs] {
        let html = dir.join("job.html");
        let page = written(&report(&["--dp", "4"], &[job], &html), &html);
        let job = [job.to_path_buf()];
        assert_what_if_is_lumos_predicts(&page, &["predict", "--dp", "4"], &job, "6 of 8 inputs");
    }
    // A damaged rank is bad input, named, and no page appears.
    let rank3 = traces.join("rank3.json.gz");
    let bytes = std::fs::read(&rank3).unwrap();
    std::fs::write(&rank3, &bytes[..bytes.len() / 2]).unwrap();
    let html = dir.join("damaged.html");
    let out = report(&["--dp", "4"], &[&traces], &html);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("error: ") && err.contains("rank3.json.gz"),
        "{err}"
    );
    assert!(!html.exists());
}

#[test]
fn the_what_if_of_a_job_without_layers_is_lumos_predicts() {
    // The DLRM job's ranks repeat no layer block, so discovery cannot
    // settle them alone: nothing is lent, and its files are read again
    // for the prediction after the page.
    let Some(dlrm) = corpus_file("multi-rank/dlrm-8xv100") else {
        return;
    };
    let dir = TempDir::new("cli-report-job-what-if-dlrm");
    let html = dir.join("job.html");
    let page = written(&report(&["--dp", "16"], &[&dlrm], &html), &html);
    assert_what_if_is_lumos_predicts(&page, &["predict", "--dp", "16"], &[dlrm], "7 of 8 inputs");
}

/// `dir`'s `rank{r}` trace (`.json.gz`) replaced by one holding only its
/// metadata events (`.json`): a rank without tasks, which the job's
/// assembly leaves out; the other files, in rank order.
fn without_tasks(dir: &Path, r: u32) -> Vec<PathBuf> {
    let gz = dir.join(format!("rank{r}.json.gz"));
    let mut doc: serde_json::Value =
        serde_json::from_slice(&lumos_testkit::gunzip_file(&gz)).unwrap();
    let events = doc["traceEvents"].as_array_mut().unwrap();
    events.retain(|e| e["ph"] == "M");
    assert!(!events.is_empty());
    std::fs::remove_file(&gz).unwrap();
    std::fs::write(dir.join(format!("rank{r}.json")), doc.to_string()).unwrap();
    let mut others: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".json.gz"))
        .collect();
    others.sort();
    others
}

/// A job with a rank that holds no task: the page leaves it out (named on
/// stderr, exit 1), and so does the what-if, which refused the whole job
/// ("nothing to predict from") and made no page. Its prediction is now
/// `lumos predict`'s of the other ranks' files, whether the ranks are lent
/// (a transformer job) or their files read again (DLRM).
#[test]
fn the_what_if_of_a_job_leaves_out_the_ranks_its_page_leaves_out() {
    let Some(dlrm) = corpus_file("multi-rank/dlrm-8xv100") else {
        return;
    };
    let dir = TempDir::new("cli-report-what-if-no-tasks");
    let gpt = dir.join("gpt");
    run_ok(
        lumos()
            .args([
                "synth", "--model", "gpt-tiny", "--tp", "2", "--pp", "2", "--dp", "2",
            ])
            .args(["--microbatches", "4", "--ranks", "all", "--out"])
            .arg(&gpt),
    );
    let dl = dir.join("dlrm");
    std::fs::create_dir_all(&dl).unwrap();
    for r in 0..8 {
        let f = format!("rank{r}.json.gz");
        std::fs::copy(dlrm.join(&f), dl.join(&f)).unwrap();
    }
    for (job, dp, left_out) in [(&gpt, "4", "5 of 7 inputs"), (&dl, "16", "6 of 7 inputs")] {
        let others = without_tasks(job, 7);
        let html = dir.join("job.html");
        let out = report(&["--dp", dp], &[job], &html);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains("rank7.json) holds no CPU or GPU task"),
            "{err}"
        );
        assert!(!err.contains("nothing to predict from"), "{err}");
        let page = std::fs::read_to_string(&html).unwrap();
        assert!(page.contains("job of 7 ranks"));
        assert_what_if_is_lumos_predicts(&page, &["predict", "--dp", dp], &others, left_out);
        std::fs::remove_file(&html).unwrap();
    }
}

#[test]
fn bad_usage_exits_2_and_bad_input_exits_1_without_a_file() {
    let dir = TempDir::new("cli-report-errors");
    let html = dir.join("r.html");
    let bad = dir.join("bad.json");
    std::fs::write(&bad, "{\"traceEvents\": [").unwrap();
    // No -o.
    let out = lumos().args(["report"]).arg(&bad).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = report(&["--dp", "0"], &[&bad], &html);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("invalid value '0' for '--dp <DP>'"));
    let out = report(&[], &[&bad], &html);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad.json"));
    let out = report(&[], &[&dir.join("missing.json")], &html);
    assert_eq!(out.status.code(), Some(1));
    // Nothing appeared, not even a temporary file.
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, vec![std::ffi::OsString::from("bad.json")]);
}

#[test]
fn two_traces_of_no_job_are_bad_usage() {
    let (Some(a), Some(b)) = (
        corpus_file("micro/a100-event-sync.json.gz"),
        corpus_file("micro/a100-simple-add.json.gz"),
    ) else {
        return;
    };
    let dir = TempDir::new("cli-report-two");
    let html = dir.join("r.html");
    let out = report(&["--per-trace"], &[&a, &b], &html);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!html.exists());
}
