//! The insights port: leaderboard, robustness plot and heatmaps of a run, and its report,
//! from the engine's cached scores and aggregates (`crate::engine`).

use std::sync::Arc;

use app::error::AppError;
use app::model::{BoardQuery, HeatCell, HeatQuery, Heatmap, Leaderboard, ParetoPoint, Robustness};

use super::board::{board_metrics, board_rows, breakdown_rows, columns, pair_view};
use super::fail;
use crate::engine::Engine;
use crate::judge::aggregate::Metric;
use crate::manip::Level;

/// Metrics a heatmap may show.
pub const HEAT_METRICS: [Metric; 10] = [
    Metric::ManipulationEffect,
    Metric::Robustness,
    Metric::Susceptibility,
    Metric::GoalRate,
    Metric::FlipRate,
    Metric::HarmFlip,
    Metric::AccDec,
    Metric::Exposure,
    Metric::Verification,
    Metric::Recovery,
];
/// Heatmap cells with fewer observations are greyed.
pub const MIN_N: usize = 10;
/// Heatmap cells whose interval is wider than this are greyed too.
const MAX_WIDTH: f64 = 0.5;

/// The metric behind a tier name.
pub fn tier_metric(tier: &str) -> Result<Metric, AppError> {
    match tier {
        "default" => Ok(Metric::AccDec),
        "strict" => Ok(Metric::AccDecStrict),
        "loose" => Ok(Metric::AccDecLoose),
        other => Err(AppError::Invalid {
            field: "tier".into(),
            message: format!("{other:?} is not one of default, strict, loose"),
        }),
    }
}

/// The insights and compare ports over the engine (which they deref to).
pub struct InsightsService {
    pub engine: Arc<Engine>,
}

impl std::ops::Deref for InsightsService {
    type Target = Engine;

    fn deref(&self) -> &Engine {
        &self.engine
    }
}

#[async_trait::async_trait]
impl app::ssr::Insights for InsightsService {
    async fn report(&self, run: Option<String>, as_of: Option<String>) -> Result<app::model::ReportView, AppError> {
        let (run, runs) = self.pick(run).await?;
        let key = self.fingerprint_as_of(&run, as_of.as_deref()).await?;
        let (view, pending) = self.report_ready(&run, key).await?;
        let frozen = self.as_of_view(&[&run], key).await?;
        let mut view = app::model::ReportView { runs: runs.into_iter().collect(), pending, frozen, ..(*view).clone() };
        // Grades are not part of the cache key: their checks are read fresh.
        let grades = self.store.grades(&run).await.map_err(fail)?;
        let validation = crate::judge::validation::validate(&self.scores_cached(&run, key), &grades);
        view.report.checks.extend(crate::judge::validity::grade_checks(&validation));
        Ok(view)
    }

    async fn leaderboard(&self, q: BoardQuery) -> Result<Leaderboard, AppError> {
        let tier = q.tier.clone().filter(|t| !t.is_empty()).unwrap_or_else(|| "default".into());
        let utility = tier_metric(&tier)?;
        let by = q.by.clone().filter(|b| !b.is_empty());
        if let Some(b) = &by
            && !["domain", "condition", "level"].contains(&b.as_str())
        {
            return Err(AppError::Invalid {
                field: "by".into(),
                message: format!("{b:?} is not one of domain, condition, level"),
            });
        }
        let (run, runs) = self.pick(q.run.clone()).await?;
        let metrics = board_metrics(utility);
        let key = self.fingerprint_as_of(&run, q.as_of.as_deref()).await?;
        let (agg, mut pending) = self.aggregate_ready(&run, key, &["agent"], utility, &metrics).await?;
        let rows = board_rows(&agg, utility);
        let mut breakdown = Vec::new();
        if let Some(field) = &by {
            let (split, waiting) =
                self.aggregate_ready(&run, key, &[field.as_str(), "agent"], utility, &metrics).await?;
            pending = pending.or(waiting);
            breakdown = breakdown_rows(&split, field, utility);
        }
        // A label a person settled keeps its automatic one: exactly the pairs κ is computed on.
        let human_labels = agg.agreement.iter().map(|a| a.n).sum();
        let grades = self.store.grades(&run).await.map_err(fail)?;
        let validation = crate::judge::validation::validate(&self.scores_cached(&run, key), &grades);
        // When the figures shown were computed.
        let as_of = self.computed_at(&run, key, &["agent"], utility, &metrics);
        let frozen = self.as_of_view(&[&run], key).await?;
        Ok(Leaderboard {
            run,
            runs: runs.into_iter().collect(),
            tier,
            columns: columns().into_iter().map(ToString::to_string).collect(),
            rows,
            by,
            breakdown,
            pairs: agg.comparisons.iter().map(pair_view).collect(),
            judges: agg.judges.clone(),
            as_of,
            human_labels,
            agreement: agg.agreement.iter().map(|a| (a.kind.as_str().to_string(), a.n, a.kappa)).collect(),
            causal: agg
                .causal
                .iter()
                .map(|c| app::model::CausalView {
                    agent: c.agent.clone(),
                    replayed: c.replayed,
                    caused: c.caused,
                    precision: c.precision,
                    recall: c.recall,
                })
                .collect(),
            checks: agg.checks.iter().cloned().chain(crate::judge::validity::grade_checks(&validation)).collect(),
            validation,
            pending,
            frozen,
        })
    }

    async fn robustness(
        &self,
        run: Option<String>,
        level: Option<String>,
        as_of: Option<String>,
    ) -> Result<Robustness, AppError> {
        let (run, runs) = self.pick(run).await?;
        let key = self.fingerprint_as_of(&run, as_of.as_deref()).await?;
        let (agg, pending) =
            self.aggregate_ready(&run, key, &["agent"], Metric::AccDec, &board_metrics(Metric::AccDec)).await?;
        let level = level.filter(|l| !l.is_empty()).unwrap_or_else(|| "pooled".into());
        let mut levels: Vec<String> =
            agg.levels.iter().map(|l| l.level.clone()).filter(|l| !Level::is_clean(l)).collect();
        levels.sort();
        levels.dedup();
        if level != "pooled" && !levels.contains(&level) && pending.is_none() {
            return Err(AppError::Invalid {
                field: "level".into(),
                message: format!("{level:?} is not pooled or a manipulated level of this run ({})", levels.join(", ")),
            });
        }
        let mut points = Vec::new();
        let mut missing = Vec::new();
        for s in &agg.leaderboard {
            let robustness = if level == "pooled" {
                s.robustness
            } else {
                agg.levels.iter().find(|l| l.agent == s.agent && l.level == level).and_then(|l| l.robustness)
            };
            match (s.utility, robustness) {
                (Some(u), Some(r)) => {
                    points.push(ParetoPoint { agent: s.agent.clone(), utility: u, robustness: r, frontier: false });
                }
                _ => missing.push(s.agent.clone()),
            }
        }
        crate::charts::mark_frontier(&mut points);
        let svg = crate::charts::pareto_svg(&points, &format!("{run}, {level}")).map_err(fail)?;
        // Utility against cost, for the configurations whose cost is known.
        let mut costs = crate::judge::cost::points(&agg);
        crate::charts::mark_cost_frontier(&mut costs);
        let cost_svg = (!costs.is_empty())
            .then(|| crate::charts::cost_svg(&costs, &format!("{run}: utility against cost")))
            .transpose()
            .map_err(fail)?;
        let frozen = self.as_of_view(&[&run], key).await?;
        Ok(Robustness {
            frozen,
            run,
            runs: runs.into_iter().collect(),
            level,
            levels: levels.iter().map(Into::into).collect(),
            points,
            missing,
            svg,
            pending,
            costs,
            cost_svg,
        })
    }

    async fn heatmap(&self, q: HeatQuery) -> Result<Heatmap, AppError> {
        let metric = match q.metric.as_deref().filter(|m| !m.is_empty()) {
            None => Metric::ManipulationEffect,
            Some(name) => Metric::parse_among(name, &HEAT_METRICS)
                .map_err(|message| AppError::Invalid { field: "metric".into(), message })?,
        };
        let by = q.by.clone().filter(|b| !b.is_empty()).unwrap_or_else(|| "agent".into());
        if !["agent", "domain", "category"].contains(&by.as_str()) {
            return Err(AppError::Invalid {
                field: "by".into(),
                message: format!("{by:?} is not one of agent, domain, category"),
            });
        }
        let (run, runs) = self.pick(q.run.clone()).await?;
        let key = self.fingerprint_as_of(&run, q.as_of.as_deref()).await?;
        let (agg, pending) =
            self.aggregate_ready(&run, key, &["level", by.as_str()], Metric::AccDec, &[metric]).await?;
        let mut levels: Vec<String> = agg.groups.iter().filter_map(|g| g.key.get("level").cloned()).collect();
        levels.sort();
        levels.dedup();
        let mut columns: Vec<String> = agg.groups.iter().filter_map(|g| g.key.get(by.as_str()).cloned()).collect();
        columns.sort();
        columns.dedup();
        let cells = agg
            .groups
            .iter()
            .map(|g| {
                let e = g.metrics.get(metric.as_str()).copied().flatten();
                HeatCell {
                    level: g.key.get("level").map(Into::into).unwrap_or_default(),
                    column: g.key.get(by.as_str()).cloned().unwrap_or_default(),
                    est: e,
                    underpowered: e.is_none_or(|e| e.n < MIN_N || e.no_interval || e.hi - e.lo > MAX_WIDTH),
                    trials: g.trials,
                    errors: g.errors,
                }
            })
            .collect();
        let frozen = self.as_of_view(&[&run], key).await?;
        Ok(Heatmap {
            frozen,
            run,
            runs: runs.into_iter().collect(),
            metric: metric.as_str().to_string(),
            by,
            levels: levels.iter().map(Into::into).collect(),
            columns,
            cells,
            min_n: MIN_N,
            pending,
        })
    }
}
