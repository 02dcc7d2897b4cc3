"""The built manual shows its figures: in a headless system Chromium, every <img> of the quick
start, a method page and a notebook page has loaded (a broken path or an empty PNG has
naturalWidth 0), and each page has at least one.

The site exists only after `sphinx-build -b html docs docs/_build/html`; without it these tests
skip. NAS_JAX_DOCS_BUILT=DIR (set by .ci/run after its docs build) names the site and makes a
missing one a failure.
"""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from test_report import _system_chromium  # noqa: E402  (a system Chromium, never a downloaded one)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REQUIRED = os.environ.get("NAS_JAX_DOCS_BUILT", "")
SITE = os.path.join(ROOT, REQUIRED or os.path.join("docs", "_build", "html"))
PAGES = ("quickstart.html", "otmann.html", "notebooks/nasbot_search.html")


@pytest.fixture(scope="module")
def site():
  missing = [p for p in PAGES if not os.path.isfile(os.path.join(SITE, p))]
  if missing and REQUIRED:
    pytest.fail(f"NAS_JAX_DOCS_BUILT={REQUIRED}: the built manual there has no {missing}; build it first")
  if missing:
    pytest.skip(f"no built manual at {os.path.relpath(SITE, ROOT)} (missing {missing}); run sphinx-build first")
  return SITE


@pytest.fixture(scope="module")
def chromium():
  webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (the test extra has it)")
  from selenium.webdriver.chrome.service import Service

  browser, driver_path = _system_chromium()
  options = webdriver.ChromeOptions()
  options.binary_location = browser
  for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,900"):
    options.add_argument(arg)
  driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
  yield driver
  driver.quit()


@pytest.mark.parametrize("page", PAGES)
def test_every_image_of_the_page_has_loaded(site, chromium, page):
  from selenium.webdriver.support.ui import WebDriverWait

  chromium.get("file://" + os.path.join(site, page))
  # Images below the fold may load late: scroll each into view, then wait for all to settle.
  chromium.execute_script("for (const i of document.images) i.scrollIntoView();")
  WebDriverWait(chromium, 30).until(
    lambda d: d.execute_script("return Array.from(document.images).every(i => i.complete);")
  )
  images = chromium.execute_script(
    "return Array.from(document.images).map(i => [i.getAttribute('src'), i.naturalWidth]);"
  )
  assert images, f"{page}: no <img> on the page"
  broken = [src for src, width in images if not width]
  assert not broken, f"{page}: images that did not load: {broken}"
