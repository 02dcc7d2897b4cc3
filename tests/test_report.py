"""The search report: built from a real (tiny) search's workdir, its table holds exactly the journal's
evaluations, its plots are embedded, failures show their error text, a killed search (torn journal,
no summary) still reports, GP runs get the distance heatmap, and the page needs nothing external."""

import dataclasses
import html.parser
import itertools
import json
import os
import shutil

import jax
import numpy as np
import pytest

import nas_jax
from nas_jax.features.otmann import otmann_distances
from nas_jax.search import journal, loop
from nas_jax.experiments import report
from nas_jax.wiring import config as config_lib
from nas_jax.wiring import config_files

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INJECTED = "injected: the worker ran out of memory"
BUDGET = 8


class _Page(html.parser.HTMLParser):
  """What the report shows: table rows, images, the failures text, and every external reference."""

  def __init__(self, text):
    super().__init__()
    self.rows, self.images, self.external, self.ids = [], [], [], set()
    self._row, self._failures, self.failures = None, 0, ""
    self.feed(text)

  def handle_starttag(self, tag, attrs):
    a = dict(attrs)
    self.ids.add(a.get("id"))
    for key in ("src", "href"):
      if a.get(key) and not a[key].startswith("data:"):
        self.external.append(a[key])
    if tag == "link" or (tag == "script" and "src" in a):
      self.external.append(tag)
    if tag == "img":
      self.images.append(a["src"])
    if tag == "tr" and "data-trial" in a:
      self._row = []
    if tag == "td" and self._row is not None:
      self._row.append("")
    if tag == "div" and a.get("id") == "failures" or self._failures and tag == "div":
      self._failures += 1

  def handle_endtag(self, tag):
    if tag == "tr" and self._row is not None:
      self.rows.append(self._row)
      self._row = None
    if tag == "div" and self._failures:
      self._failures -= 1

  def handle_data(self, data):
    if self._row:
      self._row[-1] += data
    if self._failures:
      self.failures += data


def _failing_synthetic(original):
  """The synthetic task builder, with its third evaluation raising."""

  def build(c, kind):
    task, calls = original(c, kind), itertools.count()

    def evaluate(arch_json, seed):
      if next(calls) == 2:
        raise RuntimeError(INJECTED)
      return task.evaluate(arch_json, seed)

    return task._replace(evaluate=evaluate)

  return build


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
  """A finished random search of 8 evaluations on f1 with one failed evaluation."""
  c = config_files.load_config(os.path.join(ROOT, "configs", "random_synthetic.py") + ":smoke")
  c.workdir, c.budget = str(tmp_path_factory.mktemp("run") / "w"), BUDGET
  with pytest.MonkeyPatch.context() as m:
    m.setitem(config_lib.TASKS, "synthetic", _failing_synthetic(config_lib.TASKS["synthetic"]))
    config_lib.search_from_config(c, progress=False)
  return c.workdir


def _copy(workdir, tmp_path):
  return shutil.copytree(workdir, tmp_path / "copy")


def test_table_rows_are_the_journal_evaluations(workdir, tmp_path):
  path = report.write_report(_copy(workdir, tmp_path))
  page = _Page(open(path).read())
  done = journal.replay(os.path.join(workdir, loop.JOURNAL))
  assert len(done) == BUDGET
  assert [int(r[0]) for r in page.rows] == [o.trial_id for o in done]
  assert [r[1] for r in page.rows] == [o.status.name for o in done]
  for row, o in zip(page.rows, done):
    assert (float(row[2]) == pytest.approx(o.value, rel=1e-5)) if o.ok else row[2] == "\u2013"


def test_plots_are_embedded_and_nothing_is_external(workdir, tmp_path):
  page = _Page(open(report.write_report(_copy(workdir, tmp_path), top_k=2)).read())
  assert not page.external
  assert len(page.images) == 1 + 2  # best-so-far plots, then the 2 best networks (no GP: no heatmap)
  assert all(src.startswith("data:image/png;base64,") and len(src) > 1000 for src in page.images)
  assert "distances" not in page.ids and {"progress", "best", "evaluations", "failures", "config"} <= page.ids


def test_time_axis_is_wall_clock_when_recorded_and_summed_seconds_otherwise(workdir):
  done = journal.replay(os.path.join(workdir, loop.JOURNAL))
  assert all(o.finished_at is not None for o in done)
  wall, label = report._time_axis(done)
  assert "wall-clock" in label and np.all(np.diff(wall) >= 0) and wall[0] >= 0
  old = [dataclasses.replace(o, finished_at=None) for o in done]
  summed, label = report._time_axis(old)
  assert "summed" in label and summed.tolist() == pytest.approx(np.cumsum([o.seconds for o in done]).tolist())


def test_failures_list_the_injected_error(workdir, tmp_path):
  page = _Page(open(report.write_report(_copy(workdir, tmp_path))).read())
  assert "trial 2: FAILED" in page.failures and INJECTED in page.failures
  assert sum(r[1] == "FAILED" for r in page.rows) == 1


def test_config_and_status_of_a_finished_search(workdir):
  run = report.load_run(workdir)
  text = report.report_html(run)
  assert run.summary is not None and f"Search finished ({BUDGET} of {BUDGET} evaluations)." in text
  assert "&quot;strategy&quot;: &quot;random&quot;" in text and "1 failed" in text


def test_a_killed_search_reports_its_journal_as_it_stands(workdir, tmp_path):
  killed = _copy(workdir, tmp_path)
  os.remove(os.path.join(killed, loop.SUMMARY))
  path = os.path.join(killed, loop.JOURNAL)
  data = open(path, "rb").read()
  with open(path, "wb") as f:  # what a kill in the middle of a write leaves: a torn last line
    f.write(data[: len(data) - len(data.split(b"\n")[-2]) // 2 - 1])
  page_text = open(report.write_report(killed)).read()
  page = _Page(page_text)
  assert [int(r[0]) for r in page.rows] == list(range(BUDGET - 1))
  assert f"not finished: {BUDGET - 1} of {BUDGET} evaluations; no summary.json" in page_text
  assert len(page.images) == 1 + 3


def test_a_stale_summary_is_not_taken_for_a_finished_search(workdir, tmp_path):
  """17 rows of a budget of 60 and a summary that says 4: the journal decides, the summary is stale."""
  stale = _copy(workdir, tmp_path)
  config = json.load(open(os.path.join(stale, "config.json")))
  json.dump({**config, "budget": 60}, open(os.path.join(stale, "config.json"), "w"))
  summary = json.load(open(os.path.join(stale, loop.SUMMARY)))
  json.dump({**summary, "n_evaluated": 4}, open(os.path.join(stale, loop.SUMMARY), "w"))
  state = report.search_state(report.load_run(stale))
  assert (
    state
    == f"not finished: {BUDGET} of 60 evaluations; summary.json is stale: it counts 4 evaluations, the journal holds {BUDGET}"
  )


def test_gp_runs_show_the_otmann_heatmap_of_their_best_networks(workdir, tmp_path):
  gp = _copy(workdir, tmp_path)
  config_path = os.path.join(gp, "config.json")
  config = json.load(open(config_path))
  config["strategy"] = "nasbot"  # the report reads the strategy from config.json
  json.dump(config, open(config_path, "w"))
  run = report.load_run(gp)
  d, ids, title = report.distances(run, max_networks=4)
  best = report.best_trials(run, 4)
  assert ids == sorted(o.trial_id for o in best) and "OTMANN" in title
  by_id = {o.trial_id: o for o in run.observations}
  space = report.run_space(run)
  archs = [report.to_architecture(space, by_id[i].arch_json) for i in ids]
  np.testing.assert_allclose(d, otmann_distances(archs, nu_str=0.5).d)
  assert d.shape == (4, 4) and np.all(np.diag(d) == 0) and np.all(d[~np.eye(4, dtype=bool)] > 0)
  page = _Page(report.report_html(run, top_k=1, max_networks=4))
  assert "distances" in page.ids and len(page.images) == 1 + 1 + 1


def test_best_trials_follow_the_goal_and_break_ties_by_trial(workdir):
  run = report.load_run(workdir)
  ok = [o for o in run.observations if o.ok]
  assert report.best_trials(run, 1)[0].value == max(o.value for o in ok)
  low = run._replace(goal="min")
  assert report.best_trials(low, 1)[0].value == min(o.value for o in ok)
  assert len(report.best_trials(run, 100)) == len(ok)


def test_bad_workdirs_and_arguments_are_named(workdir, tmp_path):
  with pytest.raises(ValueError, match="workdir: .* has no journal.jsonl"):
    report.load_run(tmp_path)
  (tmp_path / loop.JOURNAL).write_text("")
  with pytest.raises(ValueError, match="workdir: .* has no valid search.json"):
    report.load_run(tmp_path)
  with pytest.raises(ValueError, match="top_k: 0; expected an integer >= 1"):
    report.report_html(report.load_run(workdir), top_k=0)


def _system_chromium():
  """(browser, chromedriver) paths of a system Chromium (Debian: chromium, chromium-driver), or a
  skip: browser builds are never downloaded."""
  browser = next(filter(None, (shutil.which(n) for n in ("chromium", "chromium-browser"))), None)
  driver = shutil.which("chromedriver")
  if not browser or not driver:
    pytest.skip(
      "no system Chromium and chromedriver on PATH (Debian: apt-get install chromium"
      f" chromium-driver); found browser={browser}, chromedriver={driver}"
    )
  return browser, driver


def test_report_renders_in_headless_chromium(workdir, tmp_path):
  webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (the test extra has it)")
  from selenium.webdriver.chrome.service import Service
  from selenium.webdriver.common.by import By

  browser, driver_path = _system_chromium()
  path = report.write_report(_copy(workdir, tmp_path))
  options = webdriver.ChromeOptions()
  options.binary_location = browser
  for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
    options.add_argument(arg)
  options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
  driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
  try:
    driver.get("file://" + os.path.abspath(path))
    images = driver.execute_script(
      "return Array.from(document.images).map(i => [i.complete, i.naturalWidth, i.getBoundingClientRect().width]);"
    )
    assert len(images) == 1 + 3 and all(done and w > 0 and shown > 0 for done, w, shown in images)
    rows = driver.find_elements(By.CSS_SELECTOR, "#evaluations tbody tr")
    assert len(rows) == BUDGET and all(r.is_displayed() for r in rows)

    def column(i):
      return [
        r.find_elements(By.TAG_NAME, "td")[i].get_attribute("data-sort")
        for r in driver.find_elements(By.CSS_SELECTOR, "#evaluations tbody tr")
      ]

    header = driver.find_elements(By.CSS_SELECTOR, "#evaluations th")[2]  # value
    header.click()
    values = column(2)
    numbers = [float(v) for v in values if v]
    assert numbers == sorted(numbers) and values[-1] == ""  # the failed trial's blank sorts last
    header.click()
    numbers = [float(v) for v in column(2) if v]
    assert numbers == sorted(numbers, reverse=True)
    severe = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert not severe, severe
  finally:
    driver.quit()


def test_gp_bo_on_cells_shows_hamming_distances_of_its_encoding(tmp_path):
  c = config_files.load_config(os.path.join(ROOT, "configs", "gp_nb201.py") + ":smoke")
  c.task.path = os.path.join(ROOT, c.task.path)
  if not os.path.exists(c.task.path):
    pytest.skip(f"NAS-Bench-201 table not found at {c.task.path}; it is never downloaded")
  c.strategy, c.workdir = "random", str(tmp_path / "w")  # a quick run; the report reads config.json
  encoding, c.strategy_config = c.strategy_config.encoding, {}  # random search takes no options
  config_lib.search_from_config(c, progress=False)
  config_path = tmp_path / "w" / "config.json"
  config = json.loads(config_path.read_text())
  config.update(strategy="gp_bo", strategy_config={"encoding": encoding})
  config_path.write_text(json.dumps(config))
  run = report.load_run(tmp_path / "w")
  d, ids, title = report.distances(run, max_networks=5)
  by_id = {o.trial_id: o.arch_json["arch_str"] for o in run.observations}
  ops = [[e.split("~")[0] for e in by_id[i].split("|") if "~" in e] for i in ids]
  same_ops = np.array([[a == b for b in ops] for a in ops])
  n_paths = nas_jax.encode("path", report.run_space(run).sample(jax.random.key(0), 1)).shape[-1]
  assert title == "Hamming distance of path encodings" and d.shape == (5, 5)
  assert np.all(d[same_ops] == 0) and np.all(d == np.round(d)) and 0 <= d.min() and d.max() <= n_paths
  np.testing.assert_array_equal(d, d.T)
  page = _Page(report.report_html(run, top_k=2, max_networks=5))
  assert len(page.images) == 1 + 2 + 1 and "distances" in page.ids


def test_a_bo_run_on_cells_shows_the_otmann_distances_of_its_featurizer(tmp_path):
  c = config_files.load_config(os.path.join(ROOT, "configs", "random_nb201.py") + ":smoke")
  c.task.path = os.path.join(ROOT, c.task.path)
  if not os.path.exists(c.task.path):
    pytest.skip(f"NAS-Bench-201 table not found at {c.task.path}; it is never downloaded")
  c.workdir, c.budget = str(tmp_path / "w"), 6
  config_lib.search_from_config(c, progress=False)
  config_path = tmp_path / "w" / "config.json"
  config = json.loads(config_path.read_text())
  for featurizer, title in (("otmann", "OTMANN d (exact, nu_str 0.5, paper)"), ("path", "squared distance of path")):
    config.update(strategy="bo", strategy_config={"featurizer": featurizer})  # as a bo run's config.json reads
    config_path.write_text(json.dumps(config))
    run = report.load_run(tmp_path / "w")
    d, ids, got = report.distances(run, max_networks=4)
    assert got.startswith(title) and d.shape == (4, 4) and len(ids) == 4
    np.testing.assert_allclose(d, d.T, atol=1e-9)
    assert np.all(np.diag(d) == 0) and np.all(d >= 0)
  cells = [report.run_space(run).from_json(o.arch_json) for o in run.observations if o.trial_id in ids]
  np.testing.assert_allclose(
    d, ((np.asarray(nas_jax.encode("path", cells))[:, None] - nas_jax.encode("path", cells)[None]) ** 2).sum(-1)
  )


def test_a_multi_objective_search_shows_its_pareto_front(tmp_path):
  c = config_files.load_config(os.path.join(ROOT, "configs", "random_synthetic.py") + ":smoke")
  c.workdir, c.budget, c.objectives = str(tmp_path / "mo"), BUDGET, "params,flops"
  config_lib.search_from_config(c, progress=False)
  run = report.load_run(c.workdir)
  assert report.objectives_of(run) == (("params", "min"), ("flops", "min"))
  page = _Page(report.report_html(run, top_k=1))
  assert "pareto" in page.ids and len(page.images) == 1 + 1 + 1  # progress, Pareto front, best network
  front = json.loads(open(os.path.join(c.workdir, loop.SUMMARY)).read())["pareto_front"]
  text = report.report_html(run, top_k=1)
  assert f"{len(front)} of {BUDGET} successful evaluations are non-dominated" in text
  # A running search (no summary yet) reads the objectives from its observations.
  running = run._replace(summary=None)
  assert report.objectives_of(running) == (("flops", "min"), ("params", "min"))
  assert "pareto" in _Page(report.report_html(running, top_k=1)).ids


def test_a_multi_fidelity_search_shows_its_learning_curves(tmp_path):
  c = config_files.load_config(os.path.join(ROOT, "configs", "random_synthetic.py") + ":smoke")
  c.workdir, c.budget, c.task.fidelities, c.scheduler = str(tmp_path / "mf"), 14, "1,3,9", "sh"
  config_lib.search_from_config(c, progress=False)
  run = report.load_run(c.workdir)
  assert report.full_fidelity(run) == 9.0
  text = report.report_html(run, top_k=1)
  page = _Page(text)
  assert "curves" in page.ids and len(page.images) == 1 + 1 + 1  # progress, learning curves, best network
  # successive halving: 9 networks at 1 epoch, 3 of them at 3, 1 at 9; then a new bracket's first
  assert (
    "10 networks; 1 reached the full fidelity 9, the scheduler stopped the others early (7 after 1, 2 after 3)" in text
  )
  (best,) = report.best_trials(run, 1)
  assert best.fidelity == 9.0  # the best is read at full fidelity, not from a noisy 1-epoch value


def test_a_workdir_replaced_while_its_report_is_made_gets_no_report(workdir, tmp_path, monkeypatch):
  # The page goes into the folder the report read, and only while its name still leads there.
  run_dir = _copy(workdir, tmp_path)
  render = report.report_html

  def replace_then_render(run, **kwargs):
    os.rename(run_dir, tmp_path / "old")
    os.mkdir(run_dir)
    return render(run, **kwargs)

  monkeypatch.setattr(report, "report_html", replace_then_render)
  with pytest.raises(ValueError, match=r"was deleted or replaced while its report was made; nothing was written"):
    report.write_report(run_dir)
  assert os.listdir(run_dir) == [] and report.REPORT not in os.listdir(tmp_path / "old")
