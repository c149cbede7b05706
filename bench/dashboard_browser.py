"""Drive headless Chromium (chromedriver at DRIVER_ADDR) through the
dashboard at REST_ADDR with the token SLURM_JWT: time the first render of
the jobs table and one live update, as the page measures them
(performance.now(), window.drover.timings). Standard library only."""
import json
import os
import subprocess
import tempfile
import time
import urllib.request

DRIVER = "http://" + os.environ["DRIVER_ADDR"]
PAGE = "http://" + os.environ["REST_ADDR"] + "/"
TOKEN = os.environ["SLURM_JWT"]


def call(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(DRIVER + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        return json.loads(r.read())["value"]


def wait_driver():
    for _ in range(300):
        try:
            call("GET", "/status")
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("chromedriver did not start")


def main():
    wait_driver()
    profile = tempfile.mkdtemp(prefix="drover-dash-profile.")
    caps = {"capabilities": {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": {
        "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1280,900", "--user-data-dir=" + profile]}}}}
    sid = call("POST", "/session", caps)["sessionId"]
    s = "/session/" + sid

    def js(script, *args):
        return call("POST", s + "/execute/sync", {"script": script, "args": list(args)})

    def wait(expr, timeout=120):
        end = time.time() + timeout
        while time.time() < end:
            v = js("try { return (" + expr + "); } catch (e) { return null; }")
            if v:
                return v
            time.sleep(0.05)
        raise SystemExit("timed out waiting for " + expr)

    try:
        # Log in once (the token stays in the tab's session storage), then
        # time a fresh load of the page.
        call("POST", s + "/url", {"url": PAGE})
        js("sessionStorage.setItem('drover.token', arguments[0])", TOKEN)
        runs = []
        for _ in range(3):
            call("POST", s + "/url", {"url": PAGE})
            t = wait("window.drover && window.drover.timings.firstRender !== null && window.drover.timings")
            rows = js("return window.drover.rows.length")
            nav = js("return performance.getEntriesByType('navigation')[0].responseEnd")
            runs.append((t["firstRenderSinceNav"], t["firstRender"], rows, t["firstFetch"]))
        for since_nav, since_script, rows, fetch in runs:
            print(f"first render of the jobs table ({rows} jobs): {since_nav:.0f} ms after navigation start "
                  f"({since_script:.0f} ms after the script started, of which GET /jobs and its JSON {fetch:.0f} ms)")
        # One live update: a job submitted from the CLI, picked up by the poll.
        updates = js("return window.drover.timings.updates")
        out = subprocess.run(["sbatch", "--parsable", "-H", "-J", "live-one", "--wrap", "true"],
                             capture_output=True, text=True, check=True).stdout.strip()
        wait(f"window.drover.jobs.has('{out}') && window.drover.timings.updates > {updates}")
        t = js("return window.drover.timings")
        print(f"live update (job {out} appears; poll request to redrawn table): {t['lastUpdate']:.0f} ms "
              f"(of which request and answer {t['lastFetch']:.0f} ms)")
        n = js("return window.drover.timings.updates")
        js("document.querySelector('#refresh').click()")
        wait(f"window.drover.timings.updates > {n} && window.drover.timings.lastKind === 'full'")
        t = js("return window.drover.timings")
        print(f"full refresh (every job again, button): {t['lastUpdate']:.0f} ms in the page")
    finally:
        call("DELETE", s)


main()
