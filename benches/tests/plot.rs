//! `benches/plot.py` draws the benchmarks' CSV files: one SVG per table, titled with what it
//! compares and, under the title, the machine, the PE count and the date; a reference measured
//! at one size only (the raw store at 8 B) drawn in the reference's colour, not the subject's;
//! bar charts with y ticks and one label per group on one line. Fixed CSV text in, SVG text
//! checked (the drawing itself was looked at as PNG when the script was written).

use std::path::{Path, PathBuf};
use std::process::Command;

const SHMEM_CSV: &str = "\
table,operation,bytes,unit,min,median,reference,ref_min,ref_median,ratio,pes,machine,date
\"put latency (put + quiet, PE 0 -> PE 1), us\",put 8 B,8,us,0.1,0.2,raw-store,0.01,0.02,10.0,2,\"box: Some CPU, 2 CPUs\",2026-12-07
\"put latency (put + quiet, PE 0 -> PE 1), us\",put 64 B,64,us,0.2,0.3,memcpy,0.02,0.03,10.0,2,\"box: Some CPU, 2 CPUs\",2026-12-07
\"put latency (put + quiet, PE 0 -> PE 1), us\",put 512 B,512,us,0.3,0.4,memcpy,0.03,0.04,10.0,2,\"box: Some CPU, 2 CPUs\",2026-12-07
\"barrier_all latency, 2 PEs, us\",barrier_all 2 PEs,,us,0.8,1.1,raw-barrier,0.2,0.5,2.2,2,\"box: Some CPU, 2 CPUs\",2026-12-07
";

/// A CSV of before the run's facts were recorded: the PE count comes from the title.
const OLD_CSV: &str = "\
table,operation,bytes,unit,min,median,reference,ref_min,ref_median,ratio
\"barrier_all latency, 8 PEs, us\",barrier_all 8 PEs,,us,3.0,4.0,raw-barrier,1.0,2.0,2.0
";

const DEVICE_CSV: &str = "\
table,operation,unit,channel,pes,rounds,best,median,vs_proxy,vs_proxy_spin,machine,date
rate,p rate,Mops/s,p2p,2,3,60.0,35.0,14.0,90.0,box: Some CPU,2026-12-07
rate,p rate,Mops/s,proxy,2,3,2.4,2.5,1.0,6.0,box: Some CPU,2026-12-07
lat,put 8 B,us,p2p,2,3,0.005,0.005,0.001,0.01,box: Some CPU,2026-12-07
lat,put 64 B,us,p2p,2,3,0.006,0.006,0.001,0.01,box: Some CPU,2026-12-07
lat,put 8 B,us,proxy,2,3,20.0,30.0,1.0,1.0,box: Some CPU,2026-12-07
lat,put 64 B,us,proxy,2,3,20.0,30.0,1.0,1.0,box: Some CPU,2026-12-07
";

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("plot-test-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs plot.py on `csv` (written into `dir`); returns the SVGs it printed, by file name.
fn plot(dir: &Path, csv: &str) -> Option<Vec<(String, String)>> {
    let python = oxshmem_test_require::tool("python3", "apt-get install python3")?;
    let path = dir.join("in.csv");
    std::fs::write(&path, csv).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("plot.py");
    let out = Command::new(python).arg(script).arg(&path).arg(dir).output().unwrap();
    assert!(out.status.success(), "plot.py failed: {}", String::from_utf8_lossy(&out.stderr));
    let listed = String::from_utf8(out.stdout).unwrap();
    Some(
        listed
            .lines()
            .map(|p| {
                let name = Path::new(p).file_name().unwrap().to_string_lossy().into_owned();
                (name, std::fs::read_to_string(p).unwrap())
            })
            .collect(),
    )
}

fn svg<'a>(svgs: &'a [(String, String)], name: &str) -> &'a str {
    &svgs.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("no {name} in {svgs:?}")).1
}

/// The `fill` of every square mark (`<rect ... width="7"`) in the plot area.
fn square_fills(svg: &str) -> Vec<&str> {
    svg.lines()
        .filter(|l| l.starts_with("<rect") && l.contains("width=\"7\""))
        .filter_map(|l| l.split("fill=\"").nth(1)?.split('"').next())
        .collect()
}

#[test]
fn one_titled_svg_per_table_with_machine_pes_and_date() {
    let dir = scratch("titles");
    let Some(svgs) = plot(&dir, SHMEM_CSV) else { return };
    assert_eq!(svgs.len(), 2, "{:?}", svgs.iter().map(|s| &s.0).collect::<Vec<_>>());
    let put = svg(&svgs, "put-latency-put-quiet-pe-0-pe-1-us.svg");
    assert!(put.contains("oxshmem put (solid) vs raw-store, memcpy (dashed)"), "{put}");
    assert!(put.contains("box: Some CPU, 2 CPUs · 2 PEs · 2026-12-07"), "{put}");
    let barrier = svg(&svgs, "barrier-all-latency-2-pes-us.svg");
    assert!(barrier.contains("barrier_all latency, 2 PEs, us: oxshmem vs raw-barrier"), "{barrier}");
    assert!(barrier.contains("· 2 PEs · 2026-12-07"), "{barrier}");
    let _ = std::fs::remove_dir_all(&dir);

    // An older CSV: the PE count from the title, the date from the file, no machine claimed.
    let dir = scratch("old");
    let Some(svgs) = plot(&dir, OLD_CSV) else { return };
    let old = svg(&svgs, "barrier-all-latency-8-pes-us.svg");
    assert!(old.contains("machine not recorded · 8 PEs · "), "{old}");
    assert!(old.contains(" (file date)"), "{old}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_8_byte_reference_is_drawn_in_the_references_colour() {
    let dir = scratch("colour");
    let Some(svgs) = plot(&dir, SHMEM_CSV) else { return };
    let put = svg(&svgs, "put-latency-put-quiet-pe-0-pe-1-us.svg");
    // The subject's colour: its polyline's stroke.
    let subject = put
        .lines()
        .find(|l| l.starts_with("<polyline") && !l.contains("stroke-dasharray"))
        .and_then(|l| l.split("stroke=\"").nth(1)?.split('"').next())
        .expect("the subject's solid line");
    // Squares mark references: raw-store's one point (and its legend mark) and memcpy's.
    let squares = square_fills(put);
    assert!(squares.len() >= 3, "{squares:?}");
    assert!(squares.iter().all(|c| *c != subject), "a reference drawn in the subject's colour {subject}: {squares:?}");
    assert!(put.contains("raw-store (reference, 8 B)"), "{put}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bar_charts_have_y_ticks_and_unstaggered_labels() {
    let dir = scratch("bars");
    let Some(svgs) = plot(&dir, SHMEM_CSV) else { return };
    let barrier = svg(&svgs, "barrier-all-latency-2-pes-us.svg");
    // Ticks from 0 up past the larger bar (1.1), each with its grid line.
    for tick in [">0</text>", ">0.5</text>", ">1</text>"] {
        assert!(barrier.contains(tick), "no y tick {tick}: {barrier}");
    }
    assert!(barrier.matches("stroke=\"#ddd\"").count() >= 3, "{barrier}");
    // Labels under the bars: one per group, all on one baseline.
    let label_ys: Vec<&str> = barrier
        .lines()
        .filter(|l| l.contains(">barrier_all 2 PEs</text>"))
        .filter_map(|l| l.split(" y=\"").nth(1)?.split('"').next())
        .collect();
    assert_eq!(label_ys.len(), 1, "{barrier}");
    let _ = std::fs::remove_dir_all(&dir);

    let dir = scratch("device");
    let Some(svgs) = plot(&dir, DEVICE_CSV) else { return };
    let rate = svg(&svgs, "device-rate.svg");
    assert!(rate.contains("p2p vs proxy"), "{rate}");
    assert!(rate.contains("box: Some CPU · 2 PEs · 2026-12-07"), "{rate}");
    let lat = svg(&svgs, "device-lat.svg");
    assert!(lat.contains("log scale"), "{lat}");
    let _ = std::fs::remove_dir_all(&dir);
}
