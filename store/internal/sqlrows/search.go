package sqlrows

// How long both backends' snippets are and how many hits a search returns
// by default (the snippet marks are store.SnippetOpen and the rest).
const (
	SnippetWords       = 16 // tokens of context in a snippet
	DefaultSearchLimit = 20 // hits when SearchOptions.Limit is 0
)
