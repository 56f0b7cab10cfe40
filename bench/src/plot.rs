//! busbw against message size, one line per op, as SVG (plotters' SVG backend: no
//! system libraries).

use plotters::prelude::*;

/// Draws `points` (op, bytes, busbw GB/s; several reps per size are averaged) under
/// `title`.
pub fn busbw(path: &str, title: &str, points: &[(String, usize, f64)]) -> Result<(), Box<dyn std::error::Error>> {
    let mut ops: Vec<&str> = Vec::new();
    for (op, _, _) in points {
        if !ops.contains(&op.as_str()) {
            ops.push(op);
        }
    }
    let series = |op: &str| -> Vec<(f64, f64)> {
        let mut sizes: Vec<usize> = points.iter().filter(|p| p.0 == op).map(|p| p.1).collect();
        sizes.sort();
        sizes.dedup();
        sizes
            .into_iter()
            .map(|b| {
                let v: Vec<f64> = points.iter().filter(|p| p.0 == op && p.1 == b).map(|p| p.2).collect();
                (b as f64, v.iter().sum::<f64>() / v.len() as f64)
            })
            .collect()
    };
    let ymax = points.iter().map(|p| p.2).fold(0.1, f64::max) * 1.15;
    let xmin = points.iter().map(|p| p.1).min().unwrap_or(8).max(1) as f64;
    let xmax = points.iter().map(|p| p.1).max().unwrap_or(8).max(2) as f64;
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(56)
        .build_cartesian_2d((xmin..xmax * 1.5).log_scale(), 0.0..ymax)?;
    chart
        .configure_mesh()
        .x_desc("message size (bytes)")
        .y_desc("busbw (GB/s)")
        .x_label_formatter(&|x| {
            let x = *x;
            if x >= (1 << 20) as f64 {
                format!("{:.0}M", x / (1 << 20) as f64)
            } else if x >= 1024.0 {
                format!("{:.0}K", x / 1024.0)
            } else {
                format!("{x:.0}")
            }
        })
        .draw()?;
    for (i, op) in ops.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(series(op), color.stroke_width(2)))?
            .label(*op)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2)));
        chart.draw_series(series(op).into_iter().map(|p| Circle::new(p, 3, color.filled())))?;
    }
    chart.configure_series_labels().background_style(WHITE.mix(0.85)).border_style(BLACK).draw()?;
    root.present()?;
    Ok(())
}
