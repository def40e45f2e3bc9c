"""Render the page: Jinja2 with autoescaping, every style and script inline and allowed by hash in the page's
Content-Security-Policy, so that nothing is fetched from anywhere (a file, an S3 object, an e-mail attachment)."""

from __future__ import annotations

import base64
import hashlib
import io
from functools import cache
from importlib.resources import files

from jinja2 import Environment, PackageLoader, StrictUndefined
from jinja2.environment import TemplateStream

from ecr_retention.domain.reporting.cost import StoragePrice
from ecr_retention.domain.reporting.run_report import RunReport
from ecr_retention.report_page.rows import table_rows
from ecr_retention.report_page.view import page_view_of


@cache
def environment() -> Environment:
    return Environment(
        loader=PackageLoader("ecr_retention.report_page", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


@cache
def asset(name: str) -> str:
    return (files("ecr_retention.report_page") / "templates" / name).read_text(encoding="utf-8")


def csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def content_security_policy(style: str, script: str) -> str:
    """Nothing from the network; only this page's own style and script run (by hash, not 'unsafe-inline')."""
    return (
        f"default-src 'none'; style-src {csp_hash(style)}; script-src {csp_hash(script)}; "
        "base-uri 'none'; form-action 'none'"
    )


def page_stream(report: RunReport, price: StoragePrice) -> TemplateStream:
    """The whole page, in pieces: the view (view.py) computes every figure, the template writes every tag but the
    image table's rows (rows.py)."""
    style, script = asset("page.css"), asset("page.js")
    page = page_view_of(report, price)
    return (
        environment()
        .get_template("run.html.j2")
        .stream(
            report=report,
            page=page,
            image_table=table_rows(report),
            style=style,
            script=script,
            csp=content_security_policy(style, script),
        )
    )


def render_page(report: RunReport, price: StoragePrice) -> str:
    return "".join(page_stream(report, price))


def page_bytes(report: RunReport, price: StoragePrice) -> bytes:
    """The page encoded as it is written, piece by piece: never the whole page as text and then again as bytes."""
    buffer = io.BytesIO()
    page_stream(report, price).dump(buffer, encoding="utf-8")
    return buffer.getvalue()
