//! The server-rendered dashboard pages (the browser half is covered by the e2e suite).

use crate::support::TestApp;
use app::model::RunId;

/// The home page leads: a quick baseline run that starts from its one button, the latest
/// runs and the top of the latest leaderboard once a run finished, the launch form's
/// defaults in the server-rendered page, and the book (or how to build it).
#[tokio::test]
async fn the_home_page_leads_to_a_quick_run_and_the_book() {
    let app = TestApp::start().await;
    let (status, body) = app.text("/").await;
    assert_eq!(status, 200);
    for needle in ["Run a quick baseline", "No runs yet", "No run has finished trials yet", "750 tasks in the corpus"] {
        assert!(body.contains(needle), "{needle}");
    }
    let (_, runs) = app.text("/runs").await;
    assert!(runs.contains(r#"id="launch-tasks" name="tasks" value="shop""#), "defaults without scripts");
    // The button's run, as the browser sends it, finishes in seconds.
    let run = crate::support::quick_run(&app).await;
    let (_, body) = app.text("/").await;
    assert!(body.contains(&format!("/runs/{run}")) && body.contains("top-rows"), "the run and its leaderboard");
    assert!(body.contains("surface") && body.contains("oracle"));
    // The book is not built beside this server's files: the page says how to build it.
    let (status, body) = app.text("/book").await;
    assert_eq!(status, 404);
    assert!(body.contains("The book is not built here") && body.contains("scripts/build-site.sh"), "{body}");
}

#[tokio::test]
async fn tasks_page_filters_by_the_query() {
    let app = TestApp::start().await;
    let (status, body) = app.text("/tasks?domain=wiki&category=FALSE_ALARM").await;
    assert_eq!(status, 200);
    assert!(body.contains("72 of 750 tasks"), "count line missing");
    assert!(body.contains("wiki-false-alarm-"));
    assert!(!body.contains("shop-wardrobing-"));
    let (_, body) = app.text("/tasks?contradiction=false&domain=shop").await;
    assert!(!body.contains(">misleading<"));
}

#[tokio::test]
async fn a_task_page_shows_layers_and_links_graph_nodes_to_live_pages() {
    let app = TestApp::start().await;
    let task = app.state.world.task("shop-wardrobing-001").expect("task").clone();
    let (status, body) = app.text("/tasks/shop-wardrobing-001").await;
    assert_eq!(status, 200);
    for section in
        ["Tickets", "Surface layer", "Hidden layer", "Investigation graph", "Injection points", "Distractors"]
    {
        assert!(body.contains(section), "{section}");
    }
    for node in &task.graph {
        assert!(body.contains(&format!("href=\"{node}\"")), "{node}");
    }
    for fact in &task.gold_facts {
        assert!(body.contains(&fact.text));
    }
}

#[tokio::test]
async fn unknown_tasks_and_pages_are_404() {
    let app = TestApp::start().await;
    let (status, body) = app.text("/tasks/no-such-task").await;
    assert_eq!(status, 404);
    assert!(body.contains("task no-such-task not found"));
    assert_eq!(app.get("/definitely/not/here").await.status(), 404);
    assert_eq!(app.get("/healthz").await.status(), 200);
}

#[tokio::test]
async fn a_launched_run_streams_progress_and_fills_every_page() {
    let app = TestApp::start().await;
    let run = app.launch("CROSS_FORUM_SPAM", "surface, explorer, explorer+keyword", "L0, L1").await;

    // The progress stream sends JSON progress events and ends once the run is done.
    let body = app.get(&format!("/api/runs/events?run={run}")).await.text().await.expect("stream");
    let events: Vec<serde_json::Value> = body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).expect("json event"))
        .collect();
    assert!(!events.is_empty(), "{body}");
    let last = events.last().expect("an event");
    assert_eq!(last["status"], "done", "{body}");
    assert_eq!(last["counts"]["done"], 180);
    assert!(body.contains("event: progress"));

    let (status, page) = app.text(&format!("/runs/{run}")).await;
    assert_eq!(status, 200);
    for needle in [
        "Coverage",
        "explorer+keyword",
        "Corpus version",
        &app.state.corpus_version,
        "agent-prompt-3",
        "agent-protocol-1",
    ] {
        assert!(page.contains(needle), "{needle}");
    }
    let (_, runs) = app.text("/runs").await;
    assert!(runs.contains(&run) && runs.contains("Launch a run"));

    // A manipulated trial shows its span highlighted and named, with the timeline.
    let trials = app.state.store.trials(&RunId::from(&run)).await.expect("trials");
    let t = trials.iter().find(|t| t.level == "L1" && t.agent == "explorer").expect("an L1 explorer trial");
    let (status, page) = app.text(&format!("/runs/{run}/trials/{}", t.trial_id)).await;
    assert_eq!(status, 200);
    assert!(page.contains("class=\"manipulated\""), "no highlighted span");
    assert!(page.contains("data-kind=\"exposure\""), "no exposure marker");
    assert!(page.contains("Gold graph") && page.contains("Acc_dec Strict"));
    assert!(page.contains("Acc_rsn") && page.contains("Q_ev (1–5)"), "Q_ev beside Acc_rsn on the trajectory");

    // Leaderboard, robustness, heatmaps and their downloads agree with each other.
    let (status, page) = app.text(&format!("/leaderboard?run={run}&by=level&tier=strict")).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("Utility (Acc_dec strict, L0)"));
    // Sorting by a column, then the other way round.
    let order = |page: &str| -> Vec<String> {
        let board = page.split("<table class=\"board\"").nth(1).unwrap_or_default();
        let board = board.split("</table>").next().unwrap_or_default();
        board
            .split("<tr data-agent=\"")
            .skip(1)
            .filter_map(|row| row.split('"').next().map(ToString::to_string))
            .collect()
    };
    let (_, down) = app.text(&format!("/leaderboard?run={run}&sort=exposure")).await;
    let (_, up) = app.text(&format!("/leaderboard?run={run}&sort=-exposure")).await;
    let (down, up) = (order(&down), order(&up));
    assert_eq!(down.len(), 3, "{down:?}");
    // The keyword filter withholds flagged text, so the defended explorer sees least of it.
    assert_eq!(down.last().map(String::as_str), Some("explorer+keyword"), "{down:?}");
    assert_eq!(up.first().map(String::as_str), Some("explorer+keyword"), "{up:?}");
    let csv = app.get(&format!("/api/export/leaderboard.csv?run={run}")).await.text().await.expect("csv");
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let header = reader.headers().expect("header").clone();
    assert_eq!(&header[0], "agent");
    assert_eq!(reader.records().count(), 3);
    let json: serde_json::Value =
        app.get(&format!("/api/export/leaderboard.json?run={run}")).await.json().await.expect("json");
    assert_eq!(json["rows"].as_array().map(Vec::len), Some(3));
    assert_eq!(json["pairs"].as_array().map(Vec::len), Some(3));
    let resp = app.get(&format!("/api/export/robustness.svg?run={run}")).await;
    assert_eq!(resp.headers()["content-type"], "image/svg+xml");
    let svg = resp.text().await.expect("svg");
    assert!(svg.starts_with("<svg") && svg.matches("<title>").count() == 3, "{svg}");
    let (status, page) = app.text(&format!("/robustness?run={run}&level=L1")).await;
    assert_eq!(status, 200);
    assert!(page.contains("<svg") && page.contains("Pareto frontier"));
    let heat = app
        .get(&format!("/api/export/heatmap.csv?run={run}&metric=exposure&by=agent"))
        .await
        .text()
        .await
        .expect("csv");
    assert_eq!(heat.lines().count(), 1 + 6, "{heat}");
    let (status, _) = app.text(&format!("/heatmaps?run={run}&metric=recovery&by=category")).await;
    assert_eq!(status, 200);
    let bad = app.get(&format!("/api/export/heatmap.csv?run={run}&metric=nonsense")).await;
    assert_eq!(bad.status(), 422);
    assert!(bad.text().await.expect("body").contains("metric"));
}

#[tokio::test]
async fn the_launch_form_names_the_field_at_fault_and_stores_nothing() {
    let app = TestApp::start().await;
    for (field, value, expect) in [
        ("form[seeds]", "one", "seeds"),
        ("form[levels]", "L9", "levels"),
        ("form[agents]", "nobody", "agents"),
        ("form[tasks]", "NO_SUCH_CATEGORY", "tasks"),
    ] {
        let mut form = vec![
            ("form[tasks]", "shop"),
            ("form[agents]", "explorer"),
            ("form[levels]", "L0"),
            ("form[conditions]", "raw"),
            ("form[seeds]", "0"),
            ("form[concurrency]", "2"),
        ];
        form.retain(|(k, _)| *k != field);
        form.push((field, value));
        let (status, body) = app.call("start_run", &form).await;
        assert_eq!(status, 422, "{field}");
        let err: serde_json::Value = serde_json::from_str(&body).expect("json error");
        assert_eq!(err["kind"], "invalid", "{body}");
        assert_eq!(err["detail"]["field"], expect, "{body}");
    }
    assert!(app.state.store.runs().await.expect("runs").is_empty());
}

#[tokio::test]
async fn cross_site_writes_are_refused() {
    let app = TestApp::start().await;
    let resp = app
        .client
        .post(app.url("/api/start_run"))
        .header("origin", "https://evil.example")
        .form(&[("form[tasks]", "shop")])
        .send()
        .await
        .expect("request");
    assert_eq!(resp.status(), 403);
    assert!(app.state.store.runs().await.expect("runs").is_empty());
}

#[tokio::test]
async fn accounts_gate_the_dashboard_and_roles_gate_the_writes() {
    let app = TestApp::start().await;
    app.add_users(&[("vera", "viewer"), ("ann", "annotator"), ("otto", "operator")]).await;
    // Anonymous: pages redirect to the sign-in page, writes are refused; the sites stay open.
    let resp = app.get("/runs").await;
    assert_eq!(resp.status(), 303);
    assert_eq!(resp.headers()["location"], "/login?next=%2Fruns");
    assert_eq!(app.call("start_run", &[("form[tasks]", "shop")]).await.0, 401);
    assert_eq!(app.get("/wiki").await.status(), 200);
    let login_page = app.get("/login?next=%2Fruns").await;
    assert_eq!(login_page.status(), 200);
    assert!(login_page.headers()["content-security-policy"].to_str().expect("csp").starts_with("default-src 'none'"));
    assert!(login_page.text().await.expect("page").contains("value=\"/runs\""));

    let (status, cookie) = app.sign_in("vera", "wrong", "/runs").await;
    assert_eq!((status, cookie), (401, None));
    let mut cookies = std::collections::HashMap::new();
    for name in ["vera", "otto"] {
        let (status, cookie) = app.sign_in(name, &format!("{name}-password"), "/runs").await;
        assert_eq!(status, 303);
        cookies.insert(name, cookie.expect("a session cookie"));
    }
    let form = [
        ("form[tasks]", "CROSS_FORUM_SPAM"),
        ("form[agents]", "oracle"),
        ("form[levels]", "L0"),
        ("form[conditions]", "raw"),
        ("form[seeds]", "0"),
        ("form[concurrency]", "2"),
    ];
    let (status, body) = app.call_as("start_run", &form, Some(&cookies["vera"])).await;
    assert!(body.contains("forbidden") && status == 403, "{status} {body}");
    let resp = app.client.get(app.url("/runs")).header("cookie", &cookies["vera"]).send().await.expect("page");
    assert_eq!(resp.status(), 200, "a viewer reads");
    let (status, body) = app.call_as("start_run", &form, Some(&cookies["otto"])).await;
    assert_eq!(status, 200, "{body}");
    let (_, me) = app.call_as("whoami", &[], Some(&cookies["otto"])).await;
    assert!(me.contains("\"operator\"") && me.contains("otto"), "{me}");
}

/// Whether the queue still lists the recovery label of `trial`.
fn waiting(queue: &serde_json::Value, trial: &str) -> bool {
    queue["items"].as_array().expect("items").iter().any(|i| i["trial_id"] == trial && i["kind"] == "recovery")
}

fn as_refs<'a>(v: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    v.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

/// A trajectory line whose every adversarial string carries script payloads.
fn hostile_trajectory(task: &str) -> String {
    let payloads = [
        "<script>window.__pwned=1</script>",
        "<img src=x onerror=\"window.__pwned=2\">",
        "<a href=\"javascript:window.__pwned=3\">click</a>",
        "<svg onload=\"window.__pwned=4\"><script>window.__pwned=5</script></svg>",
    ];
    let all = payloads.join(" ");
    let observation = format!("Order notes: {all} end of notes.");
    let start = observation.find('<').expect("payload");
    let end = observation.rfind("</svg>").expect("payload") + "</svg>".len();
    serde_json::json!({
        "trial_id": "hostile-1", "task_id": task, "agent": format!("agent{}", payloads[0]), "level": "L3",
        "condition": "raw", "seed": 0, "status": "done", "spans_marked": true,
        "steps": [
            {"url": "/shop/admin/dashboard", "observation": observation, "thought": format!("I trust this: {all}"),
             "action": {"type": "goto", "url": "/shop/admin/dashboard"}, "latency_ms": 5,
             "spans": [{"id": "s1", "injection": format!("note{}", payloads[1]), "text": all, "start": start, "end": end}]},
            {"url": "/shop/admin/dashboard", "observation": "fine", "thought": "deciding",
             "action": {"type": "verdict", "verdict": "APPROVE", "rationale": format!("Because {all}")}, "latency_ms": 5}
        ],
        "verdict": {"action": "APPROVE", "rationale": format!("Because {all} and /shop/admin/<script>x</script>")}
    })
    .to_string()
}

#[tokio::test]
async fn hostile_text_is_escaped_on_every_page_that_shows_it() {
    let app = TestApp::start().await;
    let line = hostile_trajectory("shop-example-01");
    let (run, n) = server::runs::import::import_run(
        &app.state.store,
        &app.state.world,
        "hostile.jsonl",
        &line,
        (&app.state.corpus_version, Default::default()),
    )
    .await
    .expect("import");
    assert_eq!(n, 1);
    let trial = app.state.store.trials(&run).await.expect("trials")[0].trial_id.clone();
    let pages = [
        format!("/runs/{run}"),
        "/runs".to_string(),
        format!("/runs/{run}/trials/{trial}"),
        format!("/leaderboard?run={run}"),
        format!("/team?run={run}"),
        format!("/robustness?run={run}&level=L3"),
        format!("/heatmaps?run={run}&by=agent"),
        format!("/annotate?run={run}"),
    ];
    for path in &pages {
        let resp = app.get(path).await;
        assert_eq!(resp.status(), 200, "{path}");
        let csp = resp.headers()["content-security-policy"].to_str().expect("csp").to_string();
        assert!(csp.contains("script-src 'self' 'nonce-") && !csp.contains("unsafe-inline"), "{csp}");
        let body = resp.text().await.expect("body");
        // Shown as text the payloads are harmless; as markup they would start a tag.
        for raw in ["<script>window.__pwned", "<img src=x onerror", "<a href=\"javascript:", "<svg onload"] {
            assert!(!body.contains(raw), "{path} carries {raw} unescaped");
        }
    }
    let (_, page) = app.text(&format!("/runs/{run}/trials/{trial}")).await;
    assert!(page.contains("&lt;script&gt;window.__pwned=1&lt;/script&gt;"), "the payload is shown as text");
    let svg = app.get(&format!("/api/export/robustness.svg?run={run}&level=L3")).await.text().await.expect("svg");
    assert!(!svg.contains("<script>"));
    // Every inline script of a page carries the response's nonce.
    let resp = app.get(&format!("/runs/{run}/trials/{trial}")).await;
    let csp = resp.headers()["content-security-policy"].to_str().expect("csp").to_string();
    let nonce = csp.split("'nonce-").nth(1).and_then(|s| s.split('\'').next()).expect("nonce").to_string();
    let body = resp.text().await.expect("body");
    for tag in body.split("<script").skip(1) {
        assert!(
            tag.starts_with(&format!(" nonce=\"{nonce}\"")) || tag.contains(&format!("nonce=\"{nonce}\"")),
            "script without the nonce: {}",
            &tag[..tag.len().min(80)]
        );
    }
}

/// The team flow of the queue: two annotators label blind, a lock is taken only on "Start
/// labelling", two agreeing labels settle an item, disagreeing ones make a conflict that an
/// operator adjudicates (with a note when overruling the automatic label), a viewer reads
/// but cannot label, and agreement between people is reported.
#[tokio::test]
async fn disputed_labels_need_two_blind_annotators_and_conflicts_an_adjudication() {
    let app = TestApp::start().await;
    app.add_users(&[("ann", "annotator"), ("bob", "annotator"), ("otto", "operator"), ("vera", "viewer")]).await;
    let mut cookie = std::collections::HashMap::new();
    for name in ["ann", "bob", "otto", "vera"] {
        cookie.insert(name, app.sign_in(name, &format!("{name}-password"), "/").await.1.expect("signed in"));
    }
    let form = [
        ("form[tasks]", "forum"),
        ("form[agents]", "credulous"),
        ("form[levels]", "L1"),
        ("form[conditions]", "raw"),
        ("form[seeds]", "0"),
        ("form[concurrency]", "4"),
    ];
    let (status, body) = app.call_as("start_run", &form, Some(&cookie["otto"])).await;
    assert_eq!(status, 200, "{body}");
    let run: String = serde_json::from_str(&body).expect("id");
    app.wait_for(&run).await;

    let call = |name: &'static str, who: &'static str, args: Vec<(&'static str, String)>| {
        let (app, c) = (&app, cookie[who].clone());
        async move {
            let (status, body) = app.call_as(name, &as_refs(&args), Some(&c)).await;
            (status, body)
        }
    };
    let json = |(status, body): (u16, String)| {
        assert_eq!(status, 200, "{body}");
        serde_json::from_str::<serde_json::Value>(&body).expect("json")
    };
    let queue = |who: &'static str, filter: Vec<(&'static str, String)>| {
        let mut args = vec![("run", run.clone())];
        args.extend(filter);
        call("get_queue", who, args)
    };
    let q = json(queue("ann", vec![]).await);
    let items = q["items"].as_array().expect("items").clone();
    assert!(items.len() >= 2, "credulous on forum L1 leaves disputed labels (it quotes what swayed it)");
    assert_eq!(q["needed"], 2, "two annotators by default");
    // Paged: every item is on exactly one page, and a page past the end shows the last.
    let (total, pages) = (q["total"].as_u64().expect("total"), q["pages"].as_u64().expect("pages"));
    assert_eq!(pages, total.div_ceil(200).max(1), "{total} items");
    let mut listed = std::collections::HashSet::new();
    for page in 0..=pages {
        let q = json(queue("ann", vec![("page", page.to_string())]).await);
        assert_eq!(q["page"].as_u64(), Some(page.min(pages - 1)));
        if page < pages {
            for i in q["items"].as_array().expect("items") {
                assert!(listed.insert((i["trial_id"].to_string(), i["kind"].to_string())), "listed twice: {i}");
            }
        }
    }
    assert_eq!(listed.len() as u64, total);
    assert_eq!(items[0]["kind"], "recovery", "recovery first");
    let first_other = items.iter().position(|i| i["kind"] != "recovery").unwrap_or(items.len());
    assert!(items[first_other..].iter().all(|i| i["kind"] != "recovery"));
    // Blind: an annotator sees neither the automatic value nor anyone's label.
    assert!(items.iter().all(|i| i["blind"] == true && i["value"].is_null() && i["reason"].is_null()), "{items:?}");
    // Filters, with counts per value.
    let kind = items[0]["kind"].as_str().expect("kind").to_string();
    let agent_level = json(queue("ann", vec![("filter[kind]", kind.clone()), ("filter[level]", "L1".into())]).await);
    let kept = agent_level["items"].as_array().expect("items");
    assert!(!kept.is_empty() && kept.iter().all(|i| i["kind"] == kind.as_str() && i["level"] == "L1"));
    // Each choice's count is under the other filters (here the level): what choosing it lists.
    let count = agent_level["kinds"].as_array().expect("kinds").iter().find(|k| k[0] == kind.as_str()).expect("count")
        [1]
    .clone();
    assert_eq!(agent_level["total"], count, "the kind's count is what its filter lists");
    let none = json(queue("ann", vec![("filter[task]", "no-such-task".into())]).await);
    assert_eq!((none["total"].as_u64(), none["unfiltered"].as_u64()), (Some(0), Some(total)));

    // A disputed recovery label at a manipulated level, whose settling moves the leaderboard's
    // recovery cell (the queue's order is a hash of trial ids, which differ from run to run,
    // and an audited label at L0 has no recovery to move).
    let trial = items
        .iter()
        .find(|i| i["kind"] == "recovery" && i["audit"] != true && i["level"] != "L0")
        .and_then(|i| i["trial_id"].as_str())
        .expect("a disputed recovery label at a manipulated level")
        .to_string();
    let item = |trial: &str| vec![("trial", trial.to_string()), ("kind", "recovery".to_string())];
    let label_at = |trial: &str, value: &str, turn: &str| {
        vec![
            ("label[trial]", trial.to_string()),
            ("label[kind]", "recovery".to_string()),
            ("label[value]", value.to_string()),
            ("label[turn]", turn.to_string()),
            ("label[note]", String::new()),
        ]
    };
    let label = |trial: &str, value: &str, note: &str| {
        vec![
            ("label[trial]", trial.to_string()),
            ("label[kind]", "recovery".to_string()),
            ("label[value]", value.to_string()),
            ("label[turn]", String::new()),
            ("label[note]", note.to_string()),
        ]
    };
    let board = || {
        let (app, c, run) = (&app, cookie["otto"].clone(), run.clone());
        async move {
            let resp = app
                .client
                .get(app.url(&format!("/api/export/leaderboard.json?run={run}")))
                .header("cookie", c)
                .send()
                .await
                .expect("board");
            resp.json::<serde_json::Value>().await.expect("board json")
        }
    };
    let before = board().await;

    // Reading takes no lock: both annotators open it; "Start labelling" holds it.
    let opened = json(call("open_item", "ann", item(&trial)).await);
    assert_eq!((opened["can_label"].as_bool(), opened["item"]["locked_by"].is_null()), (Some(true), true), "{opened}");
    assert_eq!(json(call("open_item", "bob", item(&trial)).await)["can_label"], true);
    json(call("start_labelling", "ann", item(&trial)).await);
    let seen_by_bob = json(call("open_item", "bob", item(&trial)).await);
    assert_eq!(seen_by_bob["can_label"], false);
    assert!(seen_by_bob["why_not"].as_str().is_some_and(|w| w.contains("ann")), "{seen_by_bob}");
    assert!(seen_by_bob["item"]["kind"] == "recovery", "the context stays readable: {seen_by_bob}");
    let (status, body) = call("save_label", "bob", label(&trial, "no", "")).await;
    assert!(status == 409 && body.contains("ann"), "bob cannot label while ann holds it: {status} {body}");
    let (status, body) = call("start_labelling", "bob", item(&trial)).await;
    assert!(status == 409 && body.contains("ann"), "{status} {body}");
    // A viewer reads the whole item and cannot label.
    let viewer = json(call("open_item", "vera", item(&trial)).await);
    assert_eq!(viewer["can_label"], false);
    assert!(viewer["why_not"].as_str().is_some_and(|w| w.contains("viewer")), "{viewer}");
    assert_ne!(call("start_labelling", "vera", item(&trial)).await.0, 200);

    // Ann's label, without a note (a label alone settles nothing): one of two.
    let next = json(call("save_label", "ann", label(&trial, "yes", "")).await);
    assert!(next.as_str().is_some_and(|n| n.starts_with("/annotate/") && !n.contains(&trial)), "next: {next}");
    let q = json(queue("ann", vec![]).await);
    let mine = q["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|i| i["trial_id"] == trial.as_str() && i["kind"] == "recovery")
        .expect("still waiting")
        .clone();
    assert_eq!(
        (mine["labels"].as_u64(), mine["mine"].as_bool(), mine["blind"].as_bool()),
        (Some(1), Some(true), Some(false)),
        "{mine}"
    );
    assert!(mine["value"].is_boolean(), "after labelling, the automatic label shows");
    // Bob is still blind to it, and may label it now that ann released it.
    let for_bob = json(call("open_item", "bob", item(&trial)).await);
    assert_eq!((for_bob["item"]["blind"].as_bool(), for_bob["item"]["labels"].as_u64()), (Some(true), Some(1)));
    assert!(for_bob["item"]["votes"].as_array().is_some_and(Vec::is_empty) && for_bob["item"]["value"].is_null());
    // Nor does the trajectory page tell him: a disputed label is hidden from all but operators.
    let (status, body) = call("get_trajectory", "bob", vec![("trial", trial.clone()), ("page", "0".into())]).await;
    assert_eq!(status, 200, "{body}");
    let view: serde_json::Value = serde_json::from_str(&body).expect("view");
    let recovery =
        view["labels"].as_array().expect("labels").iter().find(|l| l["kind"] == "recovery").expect("label").clone();
    assert_eq!((recovery["hidden"].as_bool(), recovery["source"].as_str()), (Some(true), Some("hidden")), "{recovery}");
    let (status, body) = call("save_label", "bob", label_at(&trial, "no", "99999")).await;
    assert!(status == 422 && body.contains("turns 0 to"), "a turn the trial does not have is refused: {status} {body}");
    json(call("start_labelling", "bob", item(&trial)).await);
    let (status, body) = call("release_item", "ann", item(&trial)).await;
    assert!(status == 409 && body.contains("bob holds"), "nobody gives back another's hold: {status} {body}");
    json(call("save_label", "bob", label(&trial, "no", "it never verified")).await);
    // Saving gave his hold back: a second save (a double click) stores nothing.
    let (status, body) = call("save_label", "bob", label(&trial, "no", "it never verified")).await;
    assert!(status == 409 && body.contains("final once given"), "{status} {body}");
    // Having seen Ann's label, Bob would come round to it: his blind label is final, so the
    // conflict stands until a ruling, and agreement keeps his first label.
    let (status, body) = call("start_labelling", "bob", item(&trial)).await;
    assert!(status == 409 && body.contains("final once given"), "{status} {body}");
    let (status, body) = call("save_label", "bob", label(&trial, "yes", "on second thoughts")).await;
    assert!(status == 409 && body.contains("final once given"), "a blind label is final: {status} {body}");
    let again = json(call("open_item", "bob", item(&trial)).await);
    assert!(again["why_not"].as_str().is_some_and(|w| w.contains("labelled it no at")), "{again}");
    let q = json(queue("bob", vec![("filter[state]", "conflict".into())]).await);
    let top = &q["items"][0];
    assert_eq!((top["trial_id"].as_str(), top["conflict"].as_bool()), (Some(trial.as_str()), Some(true)), "{q}");
    assert_eq!(
        board().await["rows"][0]["cells"]["recovery"],
        before["rows"][0]["cells"]["recovery"],
        "a conflict moves nothing"
    );

    // The adjudicator sees both labels with their notes; overruling the automatic label needs a note.
    let ruling = json(call("open_item", "otto", item(&trial)).await);
    let votes = ruling["item"]["votes"].as_array().expect("votes");
    assert!(votes.iter().any(|v| v["author"] == "bob" && v["note"] == "it never verified"), "{ruling}");
    assert_eq!(votes.len(), 2, "one label each, as given: {ruling}");
    assert_eq!(ruling["can_adjudicate"], true);
    assert_ne!(call("adjudicate", "bob", label(&trial, "no", "ruling")).await.0, 200, "annotators cannot adjudicate");
    let automatic = ruling["item"]["value"].as_bool().expect("operators are not blind");
    let overrule = if automatic { "no" } else { "yes" };
    let (status, body) = call("adjudicate", "otto", label(&trial, overrule, "")).await;
    assert!(status == 422 && body.contains("note"), "an overruling adjudication says why: {status} {body}");
    let (status, body) = call("adjudicate", "otto", label(&trial, overrule, "profile not opened")).await;
    assert!(
        status == 409 && body.contains("start labelling it first"),
        "only a held item is labelled: {status} {body}"
    );
    json(call("start_labelling", "otto", item(&trial)).await);
    json(call("adjudicate", "otto", label(&trial, overrule, "profile not opened after exposure")).await);
    let q = json(queue("otto", vec![]).await);
    assert!(!waiting(&q, &trial), "an adjudicated label leaves the queue");
    let (status, body) = call("save_label", "ann", label(&trial, "yes", "")).await;
    assert!(
        status == 409 && body.contains("settled already"),
        "a settled label is the operator's now: {status} {body}"
    );
    // Settled, it is blind to no one: the viewer (who never labels) sees what was decided,
    // and an annotator is told why the form is closed.
    let settled = json(call("open_item", "vera", item(&trial)).await);
    assert_eq!((settled["item"]["blind"].as_bool(), settled["settled"].as_bool()), (Some(false), Some(true)));
    assert!(settled["item"]["value"].is_boolean() && !settled["item"]["votes"].as_array().expect("votes").is_empty());
    let closed = json(call("open_item", "ann", item(&trial)).await);
    assert_eq!(closed["can_label"], false);
    assert!(closed["why_not"].as_str().is_some_and(|w| w.contains("is settled already")), "{closed}");
    let after = board().await;
    assert_eq!(after["human_labels"], 1);
    assert_ne!(before["rows"][0]["cells"]["recovery"], after["rows"][0]["cells"]["recovery"], "the leaderboard moved");

    // Two agreeing labels settle an item without an operator.
    let other = items
        .iter()
        .find(|i| i["kind"] == "recovery" && i["trial_id"] != trial.as_str())
        .map(|i| i["trial_id"].as_str().expect("id").to_string());
    if let Some(other) = other {
        // An operator has seen every label, so a plain label of theirs is refused (it would
        // not be blind): operators adjudicate.
        let (status, body) = call("save_label", "otto", label(&other, "yes", "")).await;
        assert!(status == 409 && body.contains("adjudicate instead"), "{status} {body}");
        json(call("start_labelling", "ann", item(&other)).await);
        json(call("save_label", "ann", label(&other, "yes", "")).await);
        assert!(waiting(&json(queue("ann", vec![]).await), &other), "one label of two settles nothing");
        json(call("start_labelling", "bob", item(&other)).await);
        json(call("save_label", "bob", label(&other, "yes", "")).await);
        assert!(!waiting(&json(queue("ann", vec![]).await), &other), "two agreeing labels settle it");
        // Credited to both people who agreed, not to the last one alone.
        let (_, body) = call("get_trajectory", "otto", vec![("trial", other.clone()), ("page", "0".into())]).await;
        let view: serde_json::Value = serde_json::from_str(&body).expect("view");
        let recovery =
            view["labels"].as_array().expect("labels").iter().find(|l| l["kind"] == "recovery").expect("label").clone();
        assert!(recovery["reason"].as_str().is_some_and(|r| r.starts_with("settled by ann, bob")), "{recovery}");
    }
    let q = json(queue("otto", vec![]).await);
    let people = q["annotators"].as_array().expect("annotator agreement");
    let recovery = people.iter().find(|a| a["kind"] == "recovery").expect("recovery");
    assert!(recovery["n"].as_u64() >= Some(1) && recovery["raw"].is_number(), "{recovery}");
    let judged =
        q["agreement"].as_array().expect("agreement").iter().find(|a| a["kind"] == "recovery").expect("row").clone();
    assert!(judged["n"].as_u64() >= Some(1), "{judged}");

    let (_, page) = app
        .client
        .get(app.url(&format!("/runs/{run}/trials/{trial}")))
        .header("cookie", &cookie["otto"])
        .send()
        .await
        .expect("page")
        .text()
        .await
        .map(|b| (0, b))
        .expect("body");
    assert!(page.contains("automatic label:") && page.contains("adjudication"), "the override is visible");
    // The item page renders for a viewer, read-only, saying why.
    let (status, page) = app
        .client
        .get(app.url(&format!("/annotate/{trial}/recovery")))
        .header("cookie", &cookie["vera"])
        .send()
        .await
        .map(|r| (r.status().as_u16(), r))
        .expect("page");
    assert_eq!(status, 200);
    let page = page.text().await.expect("body");
    assert!(page.contains("You cannot label it now") && page.contains("viewer"), "{page}");
}

/// A run's trial list filters by task and condition and says each decision's class; a
/// trial knows its siblings (the same task under every configuration, level and condition)
/// and its neighbours in the run.
#[tokio::test]
async fn trials_list_by_task_and_condition_and_know_their_siblings() {
    let app = TestApp::start().await;
    let run = app.launch_in("forum-example-01,forum-example-02", "surface,credulous", "L1", "raw,hint").await;
    app.wait_for(&run).await;
    let list = |args: Vec<(&'static str, &'static str)>| {
        let (app, run) = (&app, run.clone());
        async move {
            let mut form = vec![("query[run]", run.as_str()), ("query[page]", "0")];
            form.extend(args);
            let (status, body) = app.call("list_trials", &form).await;
            assert_eq!(status, 200, "{body}");
            serde_json::from_str::<serde_json::Value>(&body).expect("page")
        }
    };
    let all = list(vec![]).await;
    assert_eq!(all["total"], 16, "2 tasks × 2 configurations × (L0 + L1) × 2 conditions");
    let one = list(vec![("query[task]", "forum-example-01"), ("query[condition]", "hint")]).await;
    let rows = one["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 4);
    assert!(rows.iter().all(|r| r["task"]["mirage"] == "forum-example-01" && r["condition"] == "hint"), "{rows:?}");
    let classes = ["right", "acceptable", "wrong", "harmful"];
    assert!(rows.iter().all(|r| classes.contains(&r["decision"].as_str().unwrap_or("none"))), "{rows:?}");

    let trial = rows[1]["id"].as_str().expect("id").to_string();
    let (status, body) = app.call("get_trajectory", &[("trial", &trial), ("page", "0")]).await;
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).expect("view");
    let siblings = v["around"]["siblings"].as_array().expect("siblings");
    assert_eq!(siblings.len(), 8, "the task under 2 configurations × 2 levels × 2 conditions");
    assert!(siblings.iter().all(|s| s["task"]["mirage"] == "forum-example-01"));
    assert!(siblings.iter().any(|s| s["id"] == trial.as_str()), "itself included");
    let (prev, next) = (v["around"]["prev"].as_str(), v["around"]["next"].as_str());
    assert!(prev.is_some() && next.is_some() && prev != next, "{:?}", v["around"]);
    let (_, body) = app.text(&format!("/runs/{run}/trials/{trial}")).await;
    assert!(body.contains("Same task, other configurations, levels and conditions (8)"), "the strip is on the page");

    // By outcome: the classes partition the finished trials, and each page holds only its own.
    let mut by_outcome = 0;
    for class in classes {
        let page = list(vec![("query[outcome]", class)]).await;
        let rows = page["rows"].as_array().expect("rows");
        assert!(rows.iter().all(|r| r["decision"] == class), "{class}: {rows:?}");
        by_outcome += page["total"].as_u64().expect("total");
    }
    assert_eq!(by_outcome, 16, "every finished trial has exactly one outcome");
    let (status, body) = app
        .call("list_trials", &[("query[run]", run.as_str()), ("query[page]", "0"), ("query[outcome]", "lucky")])
        .await;
    assert_eq!(status, 422, "{body}");
    assert!(body.contains("outcome") && body.contains("lucky"), "{body}");
    let (status, body) =
        app.call("list_trials", &[("query[run]", run.as_str()), ("query[page]", &usize::MAX.to_string())]).await;
    assert_eq!(status, 422, "a page past any run is refused, not an overflow: {body}");

    // Opened from a filtered list, previous and next stay inside it.
    let surface = list(vec![("query[agent]", "surface"), ("query[condition]", "hint")]).await;
    let ids: Vec<&str> =
        surface["rows"].as_array().expect("rows").iter().map(|r| r["id"].as_str().expect("id")).collect();
    assert_eq!(ids.len(), 4);
    let (status, body) = app
        .call(
            "get_trajectory",
            &[
                ("trial", ids[1]),
                ("page", "0"),
                ("within[run]", ""),
                ("within[page]", "0"),
                ("within[agent]", "surface"),
                ("within[condition]", "hint"),
            ],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).expect("view");
    assert_eq!(v["around"]["prev"], ids[0], "{:?}", v["around"]);
    assert_eq!(v["around"]["next"], ids[2], "{:?}", v["around"]);

    // The task page lists the task's trials over every run.
    let (status, body) = app.call("list_task_trials", &[("task", "forum-example-01")]).await;
    assert_eq!(status, 200, "{body}");
    let t: serde_json::Value = serde_json::from_str(&body).expect("task trials");
    assert_eq!(t["total"], 8);
    assert!(
        t["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .all(|r| r["run"] == run.as_str() && r["task"]["mirage"] == "forum-example-01")
    );
}

/// The launch form names every bad field at once, and stores nothing.
#[tokio::test]
async fn the_launch_form_names_every_bad_field_at_once() {
    let app = TestApp::start().await;
    let form = [
        ("form[tasks]", ""),
        ("form[agents]", "surface"),
        ("form[levels]", "L0"),
        ("form[conditions]", "raw, loud"),
        ("form[seeds]", "zero"),
        ("form[concurrency]", "0"),
        ("form[replay]", ""),
    ];
    let (status, body) = app.call("start_run", &form).await;
    assert_eq!(status, 422, "{body}");
    let err: serde_json::Value = serde_json::from_str(&body).expect("error");
    assert_eq!(err["kind"], "invalid_fields", "{body}");
    let fields: Vec<&str> =
        err["detail"].as_array().expect("fields").iter().map(|f| f[0].as_str().expect("field")).collect();
    assert_eq!(fields, ["tasks", "conditions", "seeds", "concurrency"], "{body}");
    // A request whose arguments do not decode is the caller's mistake too, and says so.
    let (status, body) = app.call("start_run", &[("form[tasks]", "shop")]).await;
    assert_eq!(status, 422, "{body}");
    assert!(body.contains("invalid") && body.contains("agents"), "{body}");
    let (_, runs) = app.call("list_runs", &[]).await;
    assert_eq!(runs, "[]", "nothing stored");
}

/// The figure pages, `/team` and `/annotate` always name their run: a bare URL goes to the
/// newest run's; other pages are not redirected.
#[tokio::test]
async fn team_and_annotate_pages_name_their_run() {
    let app = TestApp::start().await;
    let run = app.launch("CROSS_FORUM_SPAM", "explorer", "L0").await;
    app.wait_for(&run).await;
    let pinned = server::http::dashboard::PINNED_PAGES;
    for path in pinned.iter().copied().chain(["/annotate?kind=recovery"]) {
        let resp = app.client.get(app.url(path)).send().await.expect("page");
        assert!(resp.status().is_redirection(), "{path}: {}", resp.status());
        let to = resp.headers()["location"].to_str().expect("location").to_string();
        assert!(to.contains(&format!("run={run}")), "{path} went to {to}");
        if path.contains("kind") {
            assert!(to.contains("kind=recovery"), "the rest of the query stays: {to}");
        }
        let (status, body) = app.text(&to).await;
        assert_eq!(status, 200, "{to}");
        assert!(body.contains(&run), "{to}");
    }
    for path in ["/runs", "/tasks", "/definitions"] {
        let resp = app.client.get(app.url(path)).send().await.expect("page");
        assert_eq!(resp.status(), 200, "{path} is not pinned");
    }
    // A probe's HEAD is answered as the page, not sent on.
    let head = app.client.head(app.url("/leaderboard")).send().await.expect("head");
    assert_eq!(head.status(), 200, "HEAD /leaderboard");
    let (status, body) = app.text(&format!("/team?run={run}")).await;
    assert_eq!(status, 200);
    assert!(body.contains("labels settled by people") && body.contains("judges"), "{body}");
}

#[tokio::test]
async fn search_finds_thoughts_and_links_to_the_turn() {
    let app = TestApp::start().await;
    let run = app.launch("CROSS_FORUM_SPAM", "explorer", "L0").await;
    app.wait_for(&run).await;
    let mut found = serde_json::Value::Null;
    for _ in 0..100 {
        let (status, body) = app.call("search", &[("query", "unread page"), ("kind", "thought")]).await;
        assert_eq!(status, 200, "{body}");
        found = serde_json::from_str(&body).expect("results");
        if found["indexed_trials"] == 30 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(found["indexed_trials"], 30);
    let hits = found["hits"].as_array().expect("hits");
    assert!(!hits.is_empty(), "{found}");
    assert!(hits.iter().all(|h| h["kind"] == "thought" && h["trial"].is_string() && h["turn"].is_u64()));
    assert!(hits[0]["snippet"].as_array().expect("snippet").iter().any(|p| p[1] == true), "a highlighted match");
    let (_, page) = app.text("/search?q=unread&kind=thought").await;
    assert!(page.contains(&format!("/runs/{run}/trials/")) && page.contains("turn="), "results link to turns");
    let (_, tasks) = app.call("search", &[("query", "refund"), ("kind", "task")]).await;
    assert!(tasks.contains("\"kind\":\"task\""), "{tasks}");
    let (status, body) = app.call("search", &[("query", "x"), ("kind", "everything")]).await;
    assert!(status == 422 && body.contains("kind"), "{status} {body}");
}

#[tokio::test]
async fn the_dashboard_shows_the_numbers_mirage_score_prints() {
    let app = TestApp::start().await;
    let run = app.launch("FACT_CHECK_SOURCE", "surface, explorer, explorer+keyword", "L0, L1, L3").await;
    app.wait_for(&run).await;
    let board: serde_json::Value =
        app.get(&format!("/api/export/leaderboard.json?run={run}")).await.json().await.expect("board");
    let points: serde_json::Value =
        app.get(&format!("/api/export/robustness.json?run={run}")).await.json().await.expect("points");
    let heat: serde_json::Value = app
        .get(&format!("/api/export/heatmap.json?run={run}&metric=exposure&by=agent"))
        .await
        .json()
        .await
        .expect("heat");
    let out = crate::support::mirage_beside(&app.db, &["score", "--run", &run, "--json", "--by", "agent,level"]).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let cli: serde_json::Value = serde_json::from_slice(&out.stdout).expect("score json");
    let standings = cli["aggregate"]["leaderboard"].as_array().expect("leaderboard");
    assert_eq!(standings.len(), 3);
    for s in standings {
        let agent = s["agent"].as_str().expect("agent");
        let row = board["rows"].as_array().expect("rows").iter().find(|r| r["agent"] == agent).expect("row");
        assert_eq!(row["cells"]["utility"]["mean"], s["utility"]["mean"], "{agent} utility");
        assert_eq!(row["cells"]["utility"]["lo"], s["utility"]["lo"], "{agent} utility interval");
        assert_eq!(row["cells"]["robustness"]["hi"], s["robustness"]["hi"], "{agent} robustness");
        assert_eq!(row["band"], s["band"], "{agent} band");
        let p = points["points"].as_array().expect("points").iter().find(|p| p["agent"] == agent).expect("point");
        assert_eq!(p["utility"]["mean"], s["utility"]["mean"]);
        assert_eq!(p["robustness"]["mean"], s["robustness"]["mean"]);
    }
    for g in cli["aggregate"]["groups"].as_array().expect("groups") {
        let cell = heat["cells"]
            .as_array()
            .expect("cells")
            .iter()
            .find(|c| c["level"] == g["key"]["level"] && c["column"] == g["key"]["agent"])
            .expect("cell");
        assert_eq!(cell["est"], g["metrics"]["exposure"], "{}", g["key"]);
    }
}

#[tokio::test]
async fn the_report_page_and_mirage_report_agree() {
    let app = TestApp::start().await;
    let run = app.launch_in("FACT_CHECK_SOURCE", "surface, explorer", "L0", "raw, hint").await;
    app.wait_for(&run).await;
    let web: serde_json::Value =
        app.get(&format!("/api/export/report.json?run={run}")).await.json().await.expect("report json");
    let out = crate::support::mirage_beside(&app.db, &["report", "--run", &run, "--json"]).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let cli: serde_json::Value = serde_json::from_slice(&out.stdout).expect("report json");
    assert_eq!(web, cli, "the page and the command print the same report");
    assert_eq!(cli["main"].as_array().map(Vec::len), Some(2), "surface and explorer on the forum");
    let explorer = cli["main"].as_array().expect("main").iter().find(|r| r["agent"] == "explorer").expect("row");
    for m in ["acc_inv", "e_inv", "acc_rsn", "q_ev", "acc_dec", "acc_dec_strict", "acc_dec_loose", "hallucination"] {
        assert!(explorer["metrics"][m]["mean"].is_number(), "{m}: {explorer}");
    }
    let deltas = cli["hint_minus_raw"].as_array().expect("deltas");
    assert!(deltas.iter().any(|d| d["agent"] == "surface" && d["metric"] == "acc_dec"), "{deltas:?}");
    assert_eq!(cli["domains"][0]["domain"], "forum");
    assert_eq!((cli["slice"]["condition"].as_str(), cli["slice"]["level"].as_str()), (Some("raw"), Some("L0")));
    let hint =
        crate::support::mirage_beside(&app.db, &["report", "--run", &run, "--json", "--condition", "hint"]).await;
    let hint: serde_json::Value = serde_json::from_slice(&hint.stdout).expect("report json");
    assert_eq!(hint["slice"]["condition"], "hint");
    assert_eq!(hint["slice_trials"], cli["slice_trials"], "as many hint trials as raw ones");
    let csv = app.get(&format!("/api/export/report.csv?run={run}")).await.text().await.expect("csv");
    assert!(csv.starts_with("agent,domain,trials,errors,error_rate,acc_inv_mean"), "{csv}");
    assert_eq!(csv.lines().count(), 3);
    let page = app.get(&format!("/report?run={run}")).await.text().await.expect("page");
    for needle in ["Per configuration and domain", "Hint − Raw", "Ranking checks per domain", "q_ev"] {
        assert!(page.contains(needle), "{needle}");
    }
    let bad = app.get("/api/export/report.json?run=nope").await;
    assert_eq!(bad.status(), 404);
}

#[tokio::test]
async fn people_grade_reasoning_and_the_leaderboard_compares_them_with_the_judge() {
    let app = TestApp::start().await;
    let run = app.launch("FACT_CHECK_SOURCE", "oracle", "L0").await;
    app.wait_for(&run).await;
    let trials = app.state.store.trials(&RunId::from(&run)).await.expect("trials");
    let trial = trials[0].trial_id.as_str();
    let grade = |value: &'static str, decision: &'static str, note: &'static str| {
        [("grade[trial]", trial), ("grade[acc_rsn]", value), ("grade[decision]", decision), ("grade[note]", note)]
    };
    for (form, field) in [
        (grade("0.75", "right", "n"), "acc_rsn"),
        (grade("1.0", "perfect", "n"), "decision"),
        (grade("1.0", "right", " "), "note"),
    ] {
        let (status, body) = app.call("save_grade", &form).await;
        assert_eq!(status, 422, "{body}");
        assert!(body.contains(&format!("\"field\":\"{field}\"")), "{field}: {body}");
    }
    let board: serde_json::Value =
        app.get(&format!("/api/export/leaderboard.json?run={run}")).await.json().await.expect("board");
    assert_eq!(board["validation"]["n"], 0, "nothing stored by refused grades");
    let (status, body) = app.call("save_grade", &grade("1.0", "right", "cites every fact")).await;
    assert_eq!(status, 200, "{body}");
    let (_, view) = app.call("get_grade", &[("trial", trial)]).await;
    let view: serde_json::Value = serde_json::from_str(&view).expect("view");
    assert_eq!((view["graded_by"].as_u64(), view["mine"][1].as_str()), (Some(1), Some("right")));
    assert!(view.get("acc_rsn").is_none(), "the judge's score is not shown to the grader");
    let board: serde_json::Value =
        app.get(&format!("/api/export/leaderboard.json?run={run}")).await.json().await.expect("board");
    let v = &board["validation"];
    assert_eq!((v["n"].as_u64(), v["enough"].as_bool()), (Some(1), Some(false)), "{v}");
    assert_eq!(v["decision_agreement"], 1.0, "the oracle was right, and so says the person");
    let page = app.get(&format!("/leaderboard?run={run}")).await.text().await.expect("page");
    assert!(page.contains("too few to judge agreement"), "n = 1 is said plainly");
    assert!(page.contains("too few: n = 1 of the 10 needed"), "no κ of one pair, and the threshold said");
    // Grader validity beside the numbers: the rules' decision call against the person's, one
    // pair (too few to read), in the board, under the utility column, in the CSV, in the
    // report of the page and of the command alike.
    let decision = board["checks"].as_array().expect("checks").iter().find(|c| c["metric"] == "acc_dec").cloned();
    let decision = decision.expect("the decision's check");
    assert_eq!(
        (decision["n"].as_u64(), decision["enough"].as_bool(), decision["statistic"].as_str()),
        (Some(1), Some(false), Some("agreement")),
        "{decision}"
    );
    assert!(
        page.contains("data-testid=\"grader-validity\"") && page.contains("agreement: n 1 &lt; 10"),
        "under utility"
    );
    let csv = app.get(&format!("/api/export/leaderboard.csv?run={run}&table=checks")).await.text().await.expect("csv");
    assert!(csv.starts_with("metric,grader,against,statistic,n,value,lo,hi,too_few"), "{csv}");
    assert!(csv.lines().any(|l| l.starts_with("acc_dec,rules,") && l.ends_with(",1,,,,true")), "{csv}");
    let web: serde_json::Value =
        app.get(&format!("/api/export/report.json?run={run}")).await.json().await.expect("report json");
    let out = crate::support::mirage_beside(&app.db, &["report", "--run", &run, "--json"]).await;
    let cli: serde_json::Value = serde_json::from_slice(&out.stdout).expect("report json");
    assert_eq!(web["checks"], cli["checks"], "the page and the command check the same graders");
    assert!(cli["checks"].as_array().is_some_and(|c| c.iter().any(|c| c["metric"] == "acc_dec")), "{cli}");
    let grade_page = app.get(&format!("/grade/{trial}")).await.text().await.expect("page");
    assert!(grade_page.contains("Grade the reasoning of") && grade_page.contains("Correct decision"));
}

#[tokio::test]
async fn an_l4_trial_shows_its_search_tree() {
    let app = TestApp::start().await;
    let run = app.launch("shop-example-05", "credulous", "L4").await;
    app.wait_for(&run).await;
    let trials = app.state.store.trials(&RunId::from(&run)).await.expect("trials");
    // The planner adds the L0 twin; the search belongs to the L4 trial.
    let trial = trials.iter().find(|t| t.level == "L4").expect("the L4 trial");
    assert_eq!(trial.state, server::db::TrialState::Done, "{:?}", trial.error);
    let nodes = app.state.store.tap_nodes(&trial.trial_id).await.expect("nodes");
    assert!(!nodes.is_empty());
    let (status, page) = app.text(&format!("/runs/{run}/trials/{}", trial.trial_id)).await;
    assert_eq!(status, 200);
    assert!(page.contains("L4 search") && page.contains("tap-node"), "the tree is on the page");
    assert_eq!(page.matches("class=\"tap-node").count(), nodes.len(), "one entry per scored candidate");
    assert!(page.contains("tap-node depth-0"));
}

#[tokio::test]
async fn long_trajectories_come_a_page_of_turns_at_a_time() {
    let app = TestApp::start().await;
    let steps: Vec<serde_json::Value> = (0..300)
        .map(|i| {
            serde_json::json!({"url": "/shop/admin/dashboard", "observation": format!("page {i}"), "thought": format!("step {i}"),
                "action": {"type": "goto", "url": "/shop/admin/dashboard"}, "latency_ms": 1})
        })
        .collect();
    let line = serde_json::json!({"trial_id": "long", "task_id": "shop-example-01", "agent": "walker", "level": "L0",
        "condition": "raw", "seed": 0, "status": "done", "steps": steps,
        "verdict": {"action": "APPROVE", "rationale": "walked"}})
    .to_string();
    let (run, _) = server::runs::import::import_run(
        &app.state.store,
        &app.state.world,
        "long.jsonl",
        &line,
        (&app.state.corpus_version, Default::default()),
    )
    .await
    .expect("import");
    let trial = format!("{run}-000000");
    let (status, body) = app.call("get_trajectory", &[("trial", &trial), ("page", "14")]).await;
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).expect("view");
    assert_eq!(v["turn_count"], 300);
    let turns = v["turns"].as_array().expect("turns");
    assert_eq!((turns.len(), turns[0]["t"].as_u64(), turns[19]["t"].as_u64()), (20, Some(280), Some(299)));
    let (_, page) = app.text(&format!("/runs/{run}/trials/{trial}?page=14&turn=285")).await;
    assert!(page.contains("id=\"turn-285\"") && !page.contains("id=\"turn-279\""));
    assert!(page.contains("page 15 of 15"));
    // A page past the end shows the last one.
    let (_, body) = app.call("get_trajectory", &[("trial", &trial), ("page", "99")]).await;
    assert_eq!(serde_json::from_str::<serde_json::Value>(&body).expect("view")["page"], 14);
}

#[tokio::test]
async fn server_functions_accept_queries_with_every_field_empty() {
    // After hydration, pages call these with all-default filters (client-side navigation
    // to `/tasks`, `/leaderboard`, `/heatmaps`): the form body then has no key for them.
    let app = TestApp::start().await;
    let (status, body) = app.call("list_tasks", &[]).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"corpus_size\":750"));
    let run = app.launch("CROSS_FORUM_SPAM", "oracle", "L0").await;
    app.wait_for(&run).await;
    for name in ["get_leaderboard", "get_heatmap", "get_robustness", "get_queue"] {
        let (status, body) = app.call(name, &[]).await;
        assert_eq!(status, 200, "{name}: {body}");
        assert!(body.contains(&run), "{name} picks the newest run");
    }
}

#[tokio::test]
async fn an_operator_cancels_a_running_run_from_the_dashboard() {
    let app = TestApp::start().await;
    let run = app.launch("all", "explorer", "L0, L1, L2, L3").await;
    let (status, body) = app.call("cancel_run", &[("id", run.as_str())]).await;
    assert_eq!(status, 200, "{body}");
    app.wait_for(&run).await;
    let p = app.state.store.progress(&RunId::from(&run)).await.expect("progress");
    assert!(p.cancelled > 0, "queued trials are cancelled: {p:?}");
    assert_eq!(app.state.store.run(&RunId::from(&run)).await.expect("run").status, server::db::RunStatus::Cancelled);
    let (_, page) = app.text(&format!("/runs/{run}")).await;
    assert!(page.contains("data-status=\"cancelled\""));
    let (status, _) = app.call("cancel_run", &[("id", "run-nope")]).await;
    assert_eq!(status, 404);
}

/// A run executed by another process (`mirage run` on the same database) reaches the
/// dashboard through the progress hub: the all-runs stream reports it, the search follower
/// indexes it, and the server scores it in the background once it is seen to finish.
#[tokio::test]
async fn a_run_from_the_command_line_streams_is_indexed_and_scored_by_the_server() {
    let app = TestApp::start().await;
    let mut stream = app.get("/api/runs/events").await;
    assert_eq!(stream.status(), 200);
    let out = crate::support::mirage_beside(
        &app.db,
        &["run", "--agent", "explorer", "--tasks", "shop-example-01,forum-example-02"],
    )
    .await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let run = String::from_utf8_lossy(&out.stderr)
        .split_whitespace()
        .chain(String::from_utf8_lossy(&out.stdout).split_whitespace())
        .find(|w| w.starts_with("run-"))
        .map(|w| w.trim_end_matches(|c: char| !c.is_ascii_alphanumeric()).to_string())
        .expect("a run id");
    // The stream (opened before the run existed) reports the run, finished.
    let mut seen = String::new();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    while !(seen.contains(&run) && seen.contains("\"status\":\"done\"")) {
        let next = tokio::time::timeout_at(deadline, stream.chunk()).await.expect("an event in time");
        seen.push_str(&String::from_utf8_lossy(&next.expect("bytes").expect("open stream")));
    }
    // Indexed for search and scored in the background, with no page asking.
    for _ in 0..300 {
        let scored = !app.state.store.scores(&RunId::from(&run)).await.expect("scores").is_empty();
        let (_, found) = app.call("search", &[("query", "shop"), ("kind", "thought")]).await;
        if scored && found.contains(&run) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("the run from the command line was not indexed and scored by the server");
}

/// A run whose stored spec cannot be read is listed as such, beside the others, instead of
/// failing the list or showing the reason as its tasks.
#[tokio::test]
async fn a_run_with_an_unreadable_spec_is_listed_as_unreadable() {
    let app = TestApp::start().await;
    let trial = server::db::NewTrial {
        task_id: "shop-wardrobing-001".into(),
        agent: "oracle".into(),
        level: "L0".into(),
        condition: "raw".into(),
        seed: 0,
    };
    let broken = RunId::from("run-broken-spec");
    app.state.store.create_run(&broken, "{not a spec", "v", &[trial]).await.expect("run");
    let (status, body) = app.text("/runs").await;
    assert_eq!(status, 200, "the list stands");
    assert!(body.contains("run-broken-spec"), "the run is listed");
    assert!(body.contains("unreadable: the stored spec of run run-broken-spec"), "and says why: {body}");
    assert!(!body.contains("<td>unreadable"), "not as the run's tasks");
}
