package catalogue

import "strings"

// isSeparator reports whether b may follow a family prefix.
func isSeparator(b byte) bool {
	switch b {
	case '-', '.', ':', '@', '_':
		return true
	}
	return false
}

// stripProvider removes routing prefixes: everything up to the last '/'
// (OpenRouter "anthropic/…", "openrouter/openai/…", Gemini "models/…") and
// leading dotted vendor/region segments made only of letters (Bedrock
// "us.anthropic.claude-…", "qwen.qwen3-…").
func stripProvider(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	for {
		i := strings.IndexByte(name, '.')
		if i <= 0 || !allLetters(name[:i]) {
			return name
		}
		name = name[i+1:]
	}
}

func allLetters(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 'a' || s[i] > 'z' {
			return false
		}
	}
	return true
}

// stripSuffix removes one trailing tag, date or version: ":free"/":8b"
// (OpenRouter variants, Ollama tags), "@20250929" (Vertex), "-latest",
// "-2024-08-06", "-20250929", "-2411" (Mistral/Qwen YYMM), "-v2" (Bedrock).
// ok is false when nothing could be stripped.
func stripSuffix(name string) (string, bool) {
	if i := strings.IndexByte(name, ':'); i > 0 {
		return name[:i], true
	}
	if i := strings.IndexByte(name, '@'); i > 0 {
		return name[:i], true
	}
	if s, ok := strings.CutSuffix(name, "-latest"); ok && s != "" {
		return s, true
	}
	// -YYYY-MM-DD
	if n := len(name); n > 11 && name[n-11] == '-' && name[n-6] == '-' && name[n-3] == '-' &&
		digits(name[n-10:n-6]) && digits(name[n-5:n-3]) && digits(name[n-2:]) {
		return name[:n-11], true
	}
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return name, false
	}
	tail := name[i+1:]
	switch {
	case (len(tail) == 8 || len(tail) == 4) && digits(tail):
		return name[:i], true
	case len(tail) >= 2 && tail[0] == 'v' && digits(tail[1:]):
		return name[:i], true
	}
	return name, false
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// dotsToHyphens spells a dotted version with hyphens, the Anthropic form
// ("claude-3.5-sonnet" → "claude-3-5-sonnet").
func dotsToHyphens(name string) string {
	if strings.IndexByte(name, '.') < 0 {
		return name
	}
	return strings.ReplaceAll(name, ".", "-")
}
