"""Sandbox and model HTML made safe for the panel: an explicit allow-list, applied by nh3.

The panel's ``ipywidgets.HTML`` sets ``innerHTML`` in the user's JupyterLab, where script
runs with the Jupyter origin and token (it could run code in the user's own kernels). Every
byte a sandbox cell prints and every word the model writes is attacker-controlled, so HTML
from them goes through ``clean_html`` and images only become ``<img>`` with a ``data:`` URL:

- tags: tables and basic text markup only; no script, style, svg, math, iframe, object,
  embed, form, link, meta or base (the dangerous ones are dropped with their content);
- attributes: a short list per tag, never an event handler, ``id`` or ``class``;
- ``style``: a few typographic properties with single plain values (no ``position``, no
  ``url()``), so output cannot overlay or restyle the panel's buttons;
- URLs: ``<img src>`` only ``data:image/…``, so showing an output never fetches anything;
  links only ``http``/``https``/``mailto``, opened in a new tab with
  ``rel="noopener noreferrer"``.

An SVG is never inlined: inside ``<img>`` a browser runs none of its script or handlers and
loads none of its external resources (``svg_img``).
"""

from __future__ import annotations

import base64
import html
import re

import nh3

TAGS = frozenset(
    {
        # tables (pandas, polars, IPython.display)
        *("table", "caption", "colgroup", "col", "thead", "tbody", "tfoot", "tr", "th", "td"),
        # text markup
        *("div", "span", "p", "br", "hr", "pre", "code", "kbd", "samp", "var", "blockquote"),
        *("b", "strong", "i", "em", "u", "s", "del", "ins", "mark", "small", "sub", "sup"),
        *("abbr", "cite", "q", "h1", "h2", "h3", "h4", "h5", "h6"),
        *("ul", "ol", "li", "dl", "dt", "dd", "details", "summary", "figure", "figcaption"),
        *("a", "img"),
    }
)
DROPPED_WITH_CONTENT = frozenset(
    {
        *("script", "style", "template", "noscript", "title", "textarea", "select"),
        *("svg", "math", "iframe", "frame", "frameset", "object", "embed", "applet"),
        *("form", "link", "meta", "base", "xmp", "noembed", "noframes", "plaintext"),
    }
)
"""Not merely unwrapped: their text would be script, CSS or markup shown as garbage."""
_CELL = {"colspan", "rowspan", "align", "valign", "style", "title", "scope"}
ATTRIBUTES: dict[str, set[str]] = {
    "*": {"title", "style", "align", "dir", "lang"},
    "table": {"border", "cellpadding", "cellspacing", "summary", "style"},
    "th": _CELL,
    "td": _CELL,
    "col": {"span", "width", "style"},
    "colgroup": {"span", "width", "style"},
    "ol": {"start", "type"},
    "li": {"value"},
    "a": {"href"},
    "img": {"src", "alt", "width", "height"},
}
URL_SCHEMES = {"http", "https", "mailto", "data"}
_LINK_SCHEMES = ("http://", "https://", "mailto:")
_IMAGE_DATA = re.compile(r"data:image/(png|jpeg|gif|webp|svg\+xml);base64,[A-Za-z0-9+/]+=*")
STYLE_PROPERTIES = frozenset(
    {
        *("text-align", "vertical-align", "white-space", "font-weight", "font-style"),
        *("color", "background-color", "text-decoration"),
    }
)
_STYLE_VALUE = re.compile(r"#[0-9a-fA-F]{3,8}|[a-zA-Z-]+|rgba?\([0-9.,%\s]+\)")


def _style(value: str) -> str | None:
    """Keep only ``property: value`` pairs from the allow-list, each with one plain value."""
    kept = []
    for declaration in value.split(";"):
        name, sep, val = declaration.partition(":")
        name, val = name.strip().lower(), val.strip()
        if sep and name in STYLE_PROPERTIES and _STYLE_VALUE.fullmatch(val):
            kept.append(f"{name}:{val}")
    return ";".join(kept) or None


def _attribute(tag: str, attribute: str, value: str) -> str | None:
    """nh3's per-attribute hook: URL rules by attribute, and the style filter."""
    if attribute == "style":
        return _style(value)
    if tag == "img" and attribute == "src":
        return value if _IMAGE_DATA.fullmatch(value.strip()) else None
    if attribute == "href":
        return value if value.strip().lower().startswith(_LINK_SCHEMES) else None
    return value


def clean_html(fragment: str) -> str:
    """``fragment`` with everything outside the allow-list removed (safe for innerHTML)."""
    return nh3.clean(
        fragment,
        tags=set(TAGS),
        clean_content_tags=set(DROPPED_WITH_CONTENT),
        attributes={tag: set(names) for tag, names in ATTRIBUTES.items()},
        attribute_filter=_attribute,
        url_schemes=set(URL_SCHEMES),
        strip_comments=True,
        link_rel="noopener noreferrer nofollow",
        set_tag_attribute_values={"a": {"target": "_blank"}},  # never navigate JupyterLab away
    )


def data_img(mime: str, b64: str, css: str = "") -> str:
    """An ``<img>`` of base64 image data, or an escaped note when the data is not base64.

    Checking the alphabet keeps a crafted "PNG" from closing the attribute and adding its own.
    """
    data = "".join(b64.split())
    if not _IMAGE_DATA.fullmatch(f"data:{mime};base64,{data}"):
        return f"<pre>[{html.escape(mime)} output that is not base64 image data]</pre>"
    return f'<img class="codeagent-plot" style="{css}" src="data:{mime};base64,{data}"/>'


def svg_img(svg: str, css: str = "") -> str:
    """An SVG document as an ``<img>`` (no script, handlers or fetches run inside one)."""
    b64 = base64.b64encode(svg.encode("utf-8")).decode("ascii")
    return data_img("image/svg+xml", b64, css)
