package api

import (
	"strings"
	"testing"
)

func TestHintTags(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		readOnly, destructive, idempotent, openWorld *bool
		want                                         string
	}{
		{&yes, &no, nil, &yes, "read-only,open-world"},
		{nil, &yes, &yes, &no, "destructive,idempotent"},
		{nil, nil, nil, nil, ""},
	} {
		if got := strings.Join(hintTags(tc.readOnly, tc.destructive, tc.idempotent, tc.openWorld), ","); got != tc.want {
			t.Errorf("hintTags = %q, want %q", got, tc.want)
		}
	}
}
