"""MkDocs hook: the docstrings are written in reST, so their cross-reference roles (``:meth:`x```) reach the page
as text before the code span; drop the role and keep the code (a ``~`` prefix means "show the last name only")."""

from __future__ import annotations

import re

ROLE = re.compile(r":(?:py:)?(?:meth|class|func|mod|attr|data|exc|obj):\s*(<code>)(?:~([\w.]*\.)?)?")


def on_page_content(html: str, **_: object) -> str:
    return ROLE.sub(r"\1", html)
