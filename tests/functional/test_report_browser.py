"""The report, rendered by a real headless Chromium: the charts are drawn, and at 1000 and
1600 px wide the page has no horizontal scrollbar, lane labels are not cut, both charts have a
time axis and stretch to the window (checked in the DOM and in the screenshots' pixels)."""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from tests.functional.conftest import need

pytestmark = pytest.mark.functional

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking"]


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return name
    pytest.skip("needs chromium (apt-get install chromium; CI installs it)")
    return ""


def test_report_renders_in_chromium(project: Path, cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    need("conan", "cmake", "ninja", "g++")
    browser = _chromium()
    r = cli("build", "app", cwd=project)
    assert r.code == 0, r.out + r.err
    page = tmp_path / "report.html"
    assert cli("report", "--output", str(page), cwd=project).code == 0
    dom = subprocess.run([browser, *FLAGS, "--dump-dom", page.as_uri()], capture_output=True,
                         text=True, timeout=120, check=False).stdout
    # what the browser parsed: one bar per compile job (greet.cpp, main.cpp), one for the
    # link of the program (drawn as a link), one per step run
    assert len(re.findall(r'<rect class="job', dom)) == 3
    assert len(re.findall(r'<rect class="job link', dom)) == 1
    assert len(re.findall(r'<rect class="step', dom)) == 15
    # the budget: a line, or — far above what was used — named above a chart scaled to the use
    assert '<polyline class="mem"' in dom and ('<line class="budget"' in dom or
                                               re.search(r"budget [\d,]+ MiB ↑", dom))
    shot = tmp_path / "report.png"
    subprocess.run([browser, *FLAGS, "--window-size=1200,900", f"--screenshot={shot}",
                    page.as_uri()], capture_output=True, timeout=120, check=False)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    # a blank white page compresses to a few KB; charts and text do not
    assert len(data) > 20_000


#: appended to a copy of the page: measures the layout the browser computed and writes it
#: into the DOM, which --dump-dom returns (the page itself has no script)
MEASURE = """<script>
const d = document.documentElement, out = {};
out.scroll = d.scrollWidth; out.inner = window.innerWidth;
out.cut = [...document.querySelectorAll('.lbl')].filter(e => e.scrollWidth > e.clientWidth + 1)
  .map(e => e.textContent);
out.outside = [...document.querySelectorAll('.lbl, .tick')].filter(e => {
  const b = e.getBoundingClientRect(); return b.left < 0 || b.right > window.innerWidth; })
  .map(e => e.textContent);
out.starts = [...document.querySelectorAll('.plot')].map(e => e.getBoundingClientRect().left);
out.fonts = [...document.querySelectorAll('.lbl, .tick')].map(
  e => parseFloat(getComputedStyle(e).fontSize));
out.axes = [...document.querySelectorAll('.chart')].map(c => c.querySelectorAll('.tick').length);
out.ticksInside = [...document.querySelectorAll('.chart')].every(c => {
  const r = c.getBoundingClientRect();
  return [...c.querySelectorAll('.tick')].every(t => {
    const b = t.getBoundingClientRect(); return b.left >= r.left - 1 && b.right <= r.right + 1; });
});
out.plots = [...document.querySelectorAll('.plot svg')].map(e => e.getBoundingClientRect().right);
const pre = document.createElement('pre'); pre.id = 'measure';
pre.textContent = JSON.stringify(out); document.body.appendChild(pre);
</script>"""


def _png_rows(data: bytes) -> tuple[int, int, list[bytes], int]:
    """Width, height, unfiltered rows and bytes per pixel of an 8-bit RGB(A) PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height, bpp = 8, b"", 0, 0, 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6), (depth, color)
            bpp = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytes(width * bpp)
    for r in range(height):
        f, line = raw[r * (stride + 1)], bytearray(raw[r * (stride + 1) + 1:(r + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = bytes(line)
    return width, height, rows, bpp


def test_report_layout_at_1000_and_1600_px(project: Path, cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    need("conan", "cmake", "ninja", "g++")
    browser = _chromium()
    assert cli("build", "app", cwd=project).code == 0
    page = tmp_path / "report.html"
    assert cli("report", "-o", str(page), cwd=project).code == 0  # -o as well as --output
    text = page.read_text()
    assert ">built<" in text and ">build<" not in text  # a finished variant's outcome
    probe = tmp_path / "measure.html"
    probe.write_text(text.replace("</body>", MEASURE + "</body>"))
    for width in (1000, 1600):
        dom = subprocess.run([browser, *FLAGS, f"--window-size={width},900", "--dump-dom",
                              probe.as_uri()], capture_output=True, text=True, timeout=120,
                             check=False).stdout
        m = json.loads(re.search(r'<pre id="measure">(.*?)</pre>', dom, re.S)[1])  # type: ignore[index]
        assert m["inner"] == width, m
        assert m["scroll"] <= m["inner"], f"horizontal scrollbar at {width} px: {m}"
        assert m["cut"] == [], f"labels cut at {width} px: {m['cut']}"
        assert m["outside"] == [], f"labels outside the window at {width} px: {m['outside']}"
        assert len(set(m["starts"])) == 1, m["starts"]  # both charts' time axes line up
        assert min(m["fonts"]) >= 11, m["fonts"]  # readable
        assert len(m["axes"]) == 2 and min(m["axes"]) >= 3, m  # a time axis on both charts
        assert m["ticksInside"], m
        # the charts stretch with the window (no fixed width): they end near its right edge
        assert all(width - 60 < right <= width for right in m["plots"]), m["plots"]
        shot = tmp_path / f"report-{width}.png"
        subprocess.run([browser, *FLAGS, f"--window-size={width},900", f"--screenshot={shot}",
                        page.as_uri()], capture_output=True, timeout=120, check=False)
        w, h, rows, bpp = _png_rows(shot.read_bytes())
        assert (w, h) == (width, 900)
        # the compile-job and step bars (#4c78a8, #9ecae9) reach into the right quarter of the
        # screenshot: drawn across the window's width, not in a fixed 1150 px box
        blue = {(0x4C, 0x78, 0xA8), (0x9E, 0xCA, 0xE9)}
        cols = [x for row in rows for x in range(w * 3 // 4, w - 20, 2)
                if tuple(row[x * bpp:x * bpp + 3]) in blue]
        assert cols, f"no chart bars in the right quarter of the {width} px screenshot"
