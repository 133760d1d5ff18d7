package clientgen

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestRuntimeNames checks that runtimeNames lists every top-level name the
// runtime declares without a "$", so no server's object can shadow one.
func TestRuntimeNames(t *testing.T) {
	decl := regexp.MustCompile(`(?m)^(?:export )?(?:async )?(?:const|let|function|class|type) ([A-Za-z_$][\w$]*)`)
	found := 0
	for _, m := range decl.FindAllStringSubmatch(runtimeSource(), -1) {
		found++
		if !strings.Contains(m[1], "$") && !slices.Contains(runtimeNames, m[1]) {
			t.Errorf("the runtime declares %s, which runtimeNames lacks", m[1])
		}
	}
	if found < 10 {
		t.Fatalf("found only %d declarations in the runtime: the pattern is wrong", found)
	}
	if strings.Contains(runtimeSource(), "@@") {
		t.Error("the runtime has an unfilled @@ mark")
	}
}
