"""The site's own pages: the index (its times and short path), the summary, the glossary,
the data page and the error page."""
