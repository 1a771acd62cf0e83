package sqlrows

// What both backends' snippets look like.
const (
	SnippetOpen        = "«" // before each matched word
	SnippetClose       = "»" // after it
	SnippetCut         = "…" // marks text cut off around the match
	SnippetWords       = 16  // tokens of context in a snippet
	DefaultSearchLimit = 20  // hits when SearchOptions.Limit is 0
)
