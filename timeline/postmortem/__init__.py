"""The postmortem of an incident, from the stored data only: JSON, Markdown and one HTML file.

``document(incident)`` reads everything once and returns plain JSON-ready data (document.py);
the Markdown is written from that data (markdown.py) and the HTML is that Markdown rendered
into a template with the timeline figure and everything it needs inlined (html.py).
"""

from timeline.postmortem.document import FORMAT_VERSION, document, to_json
from timeline.postmortem.html import figure, to_html
from timeline.postmortem.markdown import to_markdown

__all__ = ["FORMAT_VERSION", "document", "figure", "to_html", "to_json", "to_markdown"]
