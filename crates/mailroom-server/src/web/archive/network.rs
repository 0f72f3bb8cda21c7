//! The agent network of a project (`/mail/archive/network?project=`): who writes to whom,
//! drawn as inline SVG computed here (so no diagram library is needed), and as a table.

use askama::Template;
use axum::extract::{Query, State};
use axum::http::{StatusCode, Uri};
use axum::response::Response;

use super::{ArchiveQuery, named};
use crate::state::AppState;
use crate::web::cache::cached;
use crate::web::error::PageError;
use crate::web::routes;
use crate::web::view::{ProjectLink, project_links, render};

#[derive(Template)]
#[template(path = "pages/archive/network.html")]
struct NetworkPage {
    slug: String,
    project_href: String,
    size: f64,
    nodes: Vec<NodeDot>,
    edges: Vec<EdgeLine>,
    projects: Vec<ProjectLink>,
}

/// An agent placed on the network's circle.
struct NodeDot {
    name: String,
    x: f64,
    y: f64,
    label_x: f64,
    anchor: &'static str,
}

/// An arrow of the network: who wrote to whom, and how much.
struct EdgeLine {
    from: String,
    to: String,
    count: i64,
    x1: f64,
    y1: f64,
    x2: f64,
    y2: f64,
    width: f64,
}

/// Side of the network's square drawing, in SVG units.
const NETWORK_SIZE: f64 = 640.0;

/// `GET /mail/archive/network`: the project named, else the first.
pub async fn show(
    State(state): State<AppState>,
    uri: Uri,
    Query(q): Query<ArchiveQuery>,
) -> Response {
    let answer = async {
        let projects = project_links(&state).await?;
        // The project named, else the first, else a page saying there is none.
        let key = named(q.project)
            .or_else(|| projects.first().map(|p| p.slug.clone()))
            .ok_or_else(|| PageError(StatusCode::NOT_FOUND, "No project yet.".into()))?;
        let net = state.core.agent_network(key).await?;
        let (nodes, edges) = network(&net.agents, &net.edges);
        Ok(render(&NetworkPage {
            project_href: routes::PROJECT.fill(&[&net.project.slug]),
            slug: net.project.slug,
            size: NETWORK_SIZE,
            nodes,
            edges,
            projects,
        }))
    };
    cached(&state, &uri, answer).await
}

/// Agents on a circle, arrows between them (a self-message is left out of the drawing but
/// stays in the table).
fn network(agents: &[String], edges: &[(String, String, i64)]) -> (Vec<NodeDot>, Vec<EdgeLine>) {
    let centre = NETWORK_SIZE / 2.0;
    let radius = NETWORK_SIZE / 2.0 - 110.0;
    let n = agents.len().max(1) as f64;
    let place = |i: usize| {
        let angle = std::f64::consts::TAU * i as f64 / n - std::f64::consts::FRAC_PI_2;
        (centre + radius * angle.cos(), centre + radius * angle.sin())
    };
    let nodes: Vec<NodeDot> = agents
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let (x, y) = place(i);
            let right = x >= centre - 1.0;
            NodeDot {
                name: name.clone(),
                x,
                y,
                label_x: if right { x + 12.0 } else { x - 12.0 },
                anchor: if right { "start" } else { "end" },
            }
        })
        .collect();
    let at = |name: &str| agents.iter().position(|a| a == name).map(place);
    let most = edges.iter().map(|e| e.2).max().unwrap_or(1).max(1) as f64;
    let edges = edges
        .iter()
        .filter_map(|(from, to, count)| {
            let ((x1, y1), (x2, y2)) = (at(from)?, at(to)?);
            // Stop short of the target's dot, so the arrowhead shows.
            let (dx, dy) = (x2 - x1, y2 - y1);
            let length = (dx * dx + dy * dy).sqrt();
            if length < 1.0 {
                return None;
            }
            let shorten = 10.0 / length;
            Some(EdgeLine {
                from: from.clone(),
                to: to.clone(),
                count: *count,
                x1,
                y1,
                x2: x2 - dx * shorten,
                y2: y2 - dy * shorten,
                width: 1.0 + 4.0 * (*count as f64).ln_1p() / most.ln_1p(),
            })
        })
        .collect();
    (nodes, edges)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_network_places_every_agent_and_draws_each_pair() {
        let agents = vec!["A".to_string(), "B".to_string(), "C".to_string()];
        let edges = vec![
            ("A".into(), "B".into(), 5),
            ("B".into(), "A".into(), 1),
            ("C".into(), "C".into(), 2),
        ];
        let (nodes, lines) = network(&agents, &edges);
        assert_eq!(nodes.len(), 3);
        assert_eq!(lines.len(), 2, "a self-message is not drawn");
        assert!(lines[0].width > lines[1].width, "more messages, a thicker arrow");
        for node in &nodes {
            assert!(
                (0.0..=NETWORK_SIZE).contains(&node.x) && (0.0..=NETWORK_SIZE).contains(&node.y)
            );
        }
    }
}
