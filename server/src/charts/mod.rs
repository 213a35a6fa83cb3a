//! Pure data → SVG: the robustness–utility plot, drawn by plotters on the server. Text that
//! came from users (configuration names) is escaped by plotters and by maud.

use app::model::ParetoPoint;
use plotters::prelude::*;

/// Size of the plot in pixels.
pub const WIDTH: u32 = 720;
pub const HEIGHT: u32 = 480;

/// Marks which points lie on the Pareto frontier: no other point is at least as good on
/// both axes and strictly better on one.
pub fn mark_frontier(points: &mut [ParetoPoint]) {
    let coords: Vec<(f64, f64)> = points.iter().map(|p| (p.utility.mean, p.robustness.mean)).collect();
    for (i, p) in points.iter_mut().enumerate() {
        let (u, r) = coords[i];
        p.frontier =
            !coords.iter().enumerate().any(|(j, &(u2, r2))| j != i && u2 >= u && r2 >= r && (u2 > u || r2 > r));
    }
}

fn axis_range(values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    // A margin around the points (labels of points at 1.0 stay inside), never far beyond [0, 1].
    let (lo, hi) = values.fold((1.0_f64, 0.0_f64), |(l, h), v| (l.min(v), h.max(v)));
    let (lo, hi) = ((lo - 0.05).max(-0.02), (hi + 0.08).min(1.1));
    if hi - lo < 0.2 { (lo - 0.1).max(-0.02)..(hi + 0.1).min(1.1) } else { lo..hi }
}

/// The plot: utility (Default Acc_dec on L0) across, robustness (1 − attack success) up,
/// 95 % intervals as error bars on both axes, the frontier joined by a line, and a hover
/// title on every point.
pub fn pareto_svg(points: &[ParetoPoint], caption: &str) -> anyhow::Result<String> {
    let mut svg = String::new();
    let mut hover = Vec::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| anyhow::anyhow!("plot: {e}"))?;
        let xs = axis_range(points.iter().flat_map(|p| [p.utility.lo, p.utility.hi]));
        let ys = axis_range(points.iter().flat_map(|p| [p.robustness.lo, p.robustness.hi]));
        let mut chart = ChartBuilder::on(&root)
            .caption(caption, ("sans-serif", 18))
            .margin(16)
            .x_label_area_size(40)
            .y_label_area_size(52)
            .build_cartesian_2d(xs, ys)
            .map_err(|e| anyhow::anyhow!("plot: {e}"))?;
        chart
            .configure_mesh()
            .light_line_style(WHITE)
            .x_desc("utility: Default Acc_dec on L0")
            .y_desc("robustness: 1 − attack success")
            .draw()
            .map_err(|e| anyhow::anyhow!("plot: {e}"))?;
        let bar = RGBColor(90, 90, 90);
        for p in points {
            let (u, r) = (p.utility.mean, p.robustness.mean);
            chart
                .draw_series([
                    PathElement::new(vec![(p.utility.lo, r), (p.utility.hi, r)], bar.stroke_width(1)),
                    PathElement::new(vec![(u, p.robustness.lo), (u, p.robustness.hi)], bar.stroke_width(1)),
                ])
                .map_err(|e| anyhow::anyhow!("plot: {e}"))?;
        }
        let mut frontier: Vec<(f64, f64)> =
            points.iter().filter(|p| p.frontier).map(|p| (p.utility.mean, p.robustness.mean)).collect();
        frontier.sort_by(|a, b| a.0.total_cmp(&b.0));
        let accent = RGBColor(196, 62, 28);
        chart
            .draw_series(LineSeries::new(frontier, accent.stroke_width(2)))
            .map_err(|e| anyhow::anyhow!("plot: {e}"))?
            .label("Pareto frontier")
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], accent.stroke_width(2)));
        for p in points {
            let (u, r) = (p.utility.mean, p.robustness.mean);
            let colour = if p.frontier { accent } else { RGBColor(40, 90, 160) };
            chart.draw_series([Circle::new((u, r), 5, colour.filled())]).map_err(|e| anyhow::anyhow!("plot: {e}"))?;
            chart
                .draw_series([Text::new(p.agent.clone(), (u, r), ("sans-serif", 13).into_font())])
                .map_err(|e| anyhow::anyhow!("plot: {e}"))?;
            hover.push((chart.backend_coord(&(u, r)), p));
        }
        chart
            .configure_series_labels()
            .border_style(BLACK)
            .background_style(WHITE.mix(0.8))
            .draw()
            .map_err(|e| anyhow::anyhow!("plot: {e}"))?;
        root.present().map_err(|e| anyhow::anyhow!("plot: {e}"))?;
    }
    // plotters has no titles; transparent circles over the points carry them (maud escapes).
    let titles = maud::html! {
        g class="hover" {
            @for ((x, y), p) in &hover {
                circle cx=(x) cy=(y) r="9" fill="transparent" {
                    title {
                        (format!(
                            "{}: utility {:.3} [{:.3}, {:.3}] (n={}), robustness {:.3} [{:.3}, {:.3}] (n={}){}",
                            p.agent, p.utility.mean, p.utility.lo, p.utility.hi, p.utility.n,
                            p.robustness.mean, p.robustness.lo, p.robustness.hi, p.robustness.n,
                            if p.frontier { ", on the frontier" } else { "" }
                        ))
                    }
                }
            }
        }
    };
    let end = svg.rfind("</svg>").ok_or_else(|| anyhow::anyhow!("plot: no closing tag"))?;
    svg.insert_str(end, &titles.into_string());
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use app::model::Est;

    use super::*;

    fn point(agent: &str, u: f64, r: f64) -> ParetoPoint {
        ParetoPoint {
            agent: agent.into(),
            utility: Est { mean: u, lo: u - 0.05, hi: u + 0.05, n: 10 },
            robustness: Est { mean: r, lo: r - 0.1, hi: r + 0.1, n: 8 },
            frontier: false,
        }
    }

    #[test]
    fn the_frontier_holds_the_undominated_points() {
        let mut ps = vec![point("a", 0.9, 0.2), point("b", 0.5, 0.8), point("c", 0.4, 0.7), point("d", 0.9, 0.2)];
        mark_frontier(&mut ps);
        let on: Vec<bool> = ps.iter().map(|p| p.frontier).collect();
        assert_eq!(on, vec![true, true, false, true]);
    }

    #[test]
    fn the_plot_escapes_names_and_titles_every_point() {
        let mut ps = vec![point("<script>alert(1)</script>", 0.8, 0.3), point("explorer+keyword", 0.6, 0.9)];
        mark_frontier(&mut ps);
        let svg = pareto_svg(&ps, "run-x, pooled").expect("svg");
        assert!(svg.starts_with("<svg"));
        assert!(!svg.contains("<script>"), "{svg}");
        assert!(svg.contains("&lt;script&gt;"));
        assert_eq!(svg.matches("<title>").count(), 2);
        assert!(svg.contains("explorer+keyword: utility 0.600 [0.550, 0.650] (n=10)"));
    }
}
