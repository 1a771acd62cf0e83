package llm

import "testing"

func TestJSONEncoder(t *testing.T) {
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"markup is not escaped", map[string]string{"code": "if a < b && c > d {}"}, `{"code":"if a < b && c > d {}"}`},
		{"no trailing newline", []int{1, 2}, `[1,2]`},
		{"raw JSON kept", struct {
			P any `json:"p"`
		}{P: map[string]any{}}, `{"p":{}}`},
	}
	var enc JSONEncoder
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := enc.Encode(tt.in)
			if err != nil || string(got) != tt.want {
				t.Fatalf("Encode = %s, %v; want %s", got, err, tt.want)
			}
			fresh, err := MarshalJSON(tt.in)
			if err != nil || string(fresh) != tt.want {
				t.Fatalf("MarshalJSON = %s, %v; want %s", fresh, err, tt.want)
			}
		})
	}
	if _, err := enc.Encode(make(chan int)); err == nil {
		t.Fatal("encoding a channel succeeded")
	}
}
