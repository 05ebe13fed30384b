"""The pieces every page shares: theme, page shell, figures, lanes, inputs, keys, words on
the page, deferred parts, URL state and exercises."""
