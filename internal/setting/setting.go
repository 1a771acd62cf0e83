// Package setting holds the one rule for numeric settings across Talaria's
// configs: zero or below means "not set", so the default applies.
package setting

// Number is what a numeric setting can be: counts, sizes, durations,
// ratios and prices.
type Number interface {
	~int | ~int64 | ~float64
}

// Or is cmp.Or for numeric settings: v when it is set (above zero), else
// def.
func Or[T Number](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}
