package sqlrows

import "testing"

// The backends' messages differ only in what they suggest opening instead.
func TestSchemaTooNewMessage(t *testing.T) {
	for instead, want := range map[string]string{
		"another database":      "database schema version 9 is newer than this talaria knows (7); upgrade talaria or use another database",
		"another database file": "database schema version 9 is newer than this talaria knows (7); upgrade talaria or use another database file",
	} {
		if got := SchemaTooNew(9, 7, instead).Error(); got != want {
			t.Errorf("message = %q, want %q", got, want)
		}
	}
}
