package gitdir

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mcpx.dev/mcpx/internal/testing/testenv"
)

// Short names for the file helpers every test here uses.
var (
	canon     = testenv.Canon
	mkdir     = testenv.Mkdir
	writeFile = testenv.WriteFile
)

func TestParseGitFile(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"gitdir: /abs/path/.git/worktrees/x\n", "/abs/path/.git/worktrees/x", true},
		{"gitdir: ../.git/modules/sm\n", "/base/.git/modules/sm", true},
		{"gitdir: ../sep.git\r\n", "/base/sep.git", true},
		{"gitdir: rel", "/base/dir/rel", true},
		{"gitdir: with space \n", "/base/dir/with space ", true}, // git keeps spaces
		{"gitdir: /a/../b/./c/\n\n\n", "/b/c", true},
		{"gitdir: \n", "", false},
		{"gitdir:/no/space\n", "", false},
		{"GITDIR: /x\n", "", false},
		{" gitdir: /x\n", "", false},
		{"", "", false},
		{"gitdir: /nul\x00byte\n", "", false},
	}
	for _, tt := range tests {
		got, err := parseGitFile([]byte(tt.in), "/base/dir")
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseGitFile(%q) = %q, %v; want %q, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func FuzzParseGitFile(f *testing.F) {
	for _, s := range []string{
		"gitdir: /abs/.git/worktrees/x\n", "gitdir: ../.git/modules/sm\n", "gitdir: x\r\n",
		"gitdir: \n", "gitdir:", "gitdir: a\r/", "gitdir: ../../../../..", "gitdir: /\x00",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		const dir = "/base/dir"
		got, err := parseGitFile(data, dir)
		if err != nil {
			if got != "" {
				t.Fatalf("error %v with a path %q", err, got)
			}
			return
		}
		if !bytes.HasPrefix(data, []byte("gitdir: ")) {
			t.Fatalf("accepted %q without the gitdir prefix", data)
		}
		if !filepath.IsAbs(got) || filepath.Clean(got) != got || strings.ContainsRune(got, 0) {
			t.Fatalf("parseGitFile(%q) = %q: not an absolute clean path", data, got)
		}
		// What git would name: the text after the prefix, CR/LF trimmed,
		// relative to dir.
		raw := strings.TrimRight(string(data[len("gitdir: "):]), "\r\n")
		want := raw
		if !filepath.IsAbs(want) {
			want = filepath.Join(dir, want)
		}
		if filepath.Clean(want) != got {
			t.Fatalf("parseGitFile(%q) = %q, want %q", data, got, filepath.Clean(want))
		}
		// Writing the answer back as an absolute gitdir reads the same,
		// unless it ends in what the parser trims.
		if !strings.HasSuffix(got, "\r") && !strings.HasSuffix(got, "\n") {
			again, err := parseGitFile([]byte("gitdir: "+got+"\n"), "/elsewhere")
			if err != nil || again != got {
				t.Fatalf("round trip of %q: %q, %v", got, again, err)
			}
		}
	})
}

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name, in string
		want     coreVars
	}{
		{"empty", "", coreVars{}},
		{"init", "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n", coreVars{}},
		{"bare", "[core]\n\tbare = true\n", coreVars{bare: true}},
		{"case", "[CORE]\n\tBare = Yes\n", coreVars{bare: true}},
		{"no value is true", "[core]\n\tbare\n", coreVars{bare: true}},
		{"empty value is false", "[core]\n\tbare = true\n\tbare =\n", coreVars{}},
		{"last wins", "[core]\nbare = true\n[core]\nbare = off\n", coreVars{}},
		{"subsection ignored", "[core \"x\"]\n\tbare = true\n[core.y]\nbare = true\n", coreVars{}},
		{"other section", "[remote \"origin\"]\n\tbare = true\n\tworktree = /x\n", coreVars{}},
		{"submodule", "[core]\n\tbare = false\n\tworktree = ../../../sm\n[remote \"origin\"]\n\turl = /x\n", coreVars{worktree: "../../../sm"}},
		{"quoted", "[core]\n\tworktree = \"/a b/c\" ; comment\n", coreVars{worktree: "/a b/c"}},
		{"comment", "[core]\n\tworktree = /a # comment\n", coreVars{worktree: "/a"}},
		{"escapes", "[core]\n\tworktree = \"/a\\\"b\\\\c\"\n", coreVars{worktree: "/a\"b\\c"}},
		{"continuation", "[core]\n\tworktree = /a\\\n/b\n", coreVars{worktree: "/a/b"}},
		{"crlf", "[core]\r\n\tbare = true\r\n", coreVars{bare: true}},
		{"header and key on one line", "[core] bare = true\n", coreVars{bare: true}},
		{"inner spaces", "[core]\n\tworktree = /a  b \n", coreVars{worktree: "/a  b"}},
		{"bad boolean ignored", "[core]\n\tbare = maybe\n", coreVars{}},
		{"unterminated quote", "[core]\n\tworktree = \"/a\n\tbare = true\n", coreVars{bare: true}},
		{"broken header", "[core\n\tbare = true\n[core]\n\tworktree = /w\n", coreVars{worktree: "/w"}},
	}
	for _, tt := range tests {
		if got := parseConfig([]byte(tt.in)); got != tt.want {
			t.Errorf("%s: parseConfig(%q) = %+v, want %+v", tt.name, tt.in, got, tt.want)
		}
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte("[core]\n\tbare = true\n\tworktree = ../../../sm\n"))
	f.Add([]byte("[core \"x\"] bare\n[core]worktree=\"a\\\"b\" ; c\n"))
	f.Add([]byte("[core]\n\tworktree = /a\\\r\n/b\\"))
	f.Add([]byte("[\x00\x00\"")) // once read past the end of an unterminated subsection
	f.Fuzz(func(t *testing.T, data []byte) {
		parseConfig(data) // must not panic or loop
		// A value written the way `git config` quotes it reads back as itself.
		w := string(data)
		if strings.ContainsAny(w, "\x00\b") {
			return
		}
		quoted := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`).Replace(w)
		got := parseConfig([]byte("[core]\n\tworktree = \"" + quoted + "\"\n"))
		if got.worktree != w {
			t.Fatalf("worktree %q read back as %q", w, got.worktree)
		}
	})
}

func TestValidHead(t *testing.T) {
	dir := t.TempDir()
	for content, want := range map[string]bool{
		"ref: refs/heads/main\n":                      true,
		"ref:refs/heads/main":                         true,
		"ref: HEAD\n":                                 false,
		"0123456789abcdef0123456789abcdef01234567\n":  true,
		"0123456789abcdef0123456789abcdef01234567":    true,
		"0123456789abcdef0123456789abcdef0123456\n":   false,
		"0123456789abcdef0123456789abcdef01234567xyz": false,
		strings.Repeat("a", 64) + "\n":                true,
		"":                                            false,
		"garbage":                                     false,
	} {
		p := filepath.Join(dir, "HEAD")
		writeFile(t, p, content)
		if got := validHead(p); got != want {
			t.Errorf("HEAD %q: valid = %v, want %v", content, got, want)
		}
	}
	os.Remove(filepath.Join(dir, "HEAD"))
	if err := os.Symlink("refs/heads/main", filepath.Join(dir, "HEAD")); err != nil {
		t.Fatal(err)
	}
	if !validHead(filepath.Join(dir, "HEAD")) {
		t.Error("a symlink HEAD into refs/ is valid")
	}
}

// TestDiscoverAgreesWithGit compares Discover with `git rev-parse` in the
// layouts git knows. core.bare and core.worktree, which ReadRepo reads, are
// compared through the resolver in package broker.
func TestDiscoverAgreesWithGit(t *testing.T) {
	tmp := canon(t, t.TempDir())
	paths := testenv.Worktrees(t, filepath.Join(tmp, "app"), map[string]string{"sub/deep/x.txt": "x\n"}, "app-wt1")
	main, wt1 := paths[0], paths[1]
	lib := testenv.Worktrees(t, filepath.Join(tmp, "lib"), map[string]string{"pkg/lib.go": "package pkg\n"})[0]
	testenv.RunGit(t, main, "submodule", "add", "-q", lib, "third_party/lib")
	bare := filepath.Join(tmp, "app.git")
	testenv.RunGit(t, tmp, "clone", "-q", "--bare", main, bare)
	sep := filepath.Join(tmp, "sep")
	mkdir(t, filepath.Join(tmp, "store"))
	testenv.RunGit(t, tmp, "init", "-q", "--separate-git-dir", filepath.Join(tmp, "store/sep.git"), sep)
	broken := mkdir(t, filepath.Join(tmp, "broken/in"))
	writeFile(t, filepath.Join(tmp, "broken/.git"), "gitdir: /nowhere\n")
	outside := mkdir(t, filepath.Join(tmp, "plain/a"))

	for _, tt := range []struct {
		dir      string
		kind     Kind
		ceilings []string
	}{
		{main, Worktree, nil},
		{filepath.Join(main, "sub/deep"), Worktree, nil},
		{wt1, Worktree, nil},
		{filepath.Join(wt1, "sub"), Worktree, nil},
		{filepath.Join(main, "third_party/lib"), Worktree, nil},
		{filepath.Join(main, "third_party/lib/pkg"), Worktree, nil},
		{filepath.Join(main, "third_party"), Worktree, nil},
		{filepath.Join(main, ".git/refs"), InGitDir, nil},
		{bare, InGitDir, nil},
		{filepath.Join(bare, "refs/heads"), InGitDir, nil},
		{sep, Worktree, nil},
		{broken, Broken, nil},
		{outside, Outside, nil},
		{filepath.Join(main, "sub/deep"), Outside, []string{main}},
		{filepath.Join(main, "sub"), Worktree, []string{filepath.Join(main, "sub/deep")}},
	} {
		ceilings := map[string]bool{}
		for _, c := range tt.ceilings {
			ceilings[c] = true
		}
		d := Discover(tt.dir, ceilings)
		if d == nil {
			t.Errorf("Discover(%s) = nil", tt.dir)
			continue
		}
		if d.Kind != tt.kind {
			t.Errorf("Discover(%s, ceilings %v).Kind = %d, want %d", tt.dir, tt.ceilings, d.Kind, tt.kind)
		}
		var top, common string
		switch d.Kind {
		case Worktree:
			top, common = d.Top, d.CommonDir
		case InGitDir:
			common = d.CommonDir
		}
		gitTop, gitCommon := testenv.GitRevParse(t, tt.dir, "GIT_CEILING_DIRECTORIES="+strings.Join(tt.ceilings, ":"))
		if top != gitTop || common != gitCommon {
			t.Errorf("Discover(%s, ceilings %v) = %+v; git says top %q, common dir %q", tt.dir, tt.ceilings, d, gitTop, gitCommon)
		}
		if !d.Valid() {
			t.Errorf("Discover(%s): a fresh answer is not valid", tt.dir)
		}
	}
	if d := Discover(filepath.Join(tmp, "missing"), nil); d != nil {
		t.Errorf("Discover of a missing directory = %+v, want nil", d)
	}
}

// TestMainTop: only a worktree whose .git file names the common dir itself
// (a --separate-git-dir checkout) is the main worktree git records nothing of.
func TestMainTop(t *testing.T) {
	tmp := canon(t, t.TempDir())
	paths := testenv.Worktrees(t, filepath.Join(tmp, "app"), nil, "app-wt1")
	sep := filepath.Join(tmp, "sep")
	store := filepath.Join(mkdir(t, filepath.Join(tmp, "store")), "sep.git")
	testenv.RunGit(t, tmp, "init", "-q", "--separate-git-dir", store, sep)
	for dir, want := range map[string]string{paths[0]: "", paths[1]: "", sep: sep} {
		if d := Discover(dir, nil); d.MainTop != want {
			t.Errorf("Discover(%s).MainTop = %q, want %q", dir, d.MainTop, want)
		}
	}
	if r := ReadRepo(canon(t, store), sep); r.Root != sep || r.Bare || r.Worktree != "" || !r.Valid() {
		t.Errorf("ReadRepo(%s) = %+v, want root %s", store, r, sep)
	}
}

// TestValid: an answer stops being valid when what it depended on changes.
func TestValid(t *testing.T) {
	tmp := canon(t, t.TempDir())
	dir := mkdir(t, filepath.Join(tmp, "later/a"))
	d := Discover(dir, nil)
	if d.Kind != Outside || !d.Valid() {
		t.Fatalf("Discover(%s) = %+v", dir, d)
	}
	testenv.RunGit(t, filepath.Join(tmp, "later"), "init", "-q")
	if d.Valid() {
		t.Error("still valid after git init above the directory")
	}
	d = Discover(dir, nil)
	r := ReadRepo(d.CommonDir, d.MainTop)
	if d.Kind != Worktree || !d.Valid() || !r.Valid() {
		t.Fatalf("after git init: %+v, %+v", d, r)
	}
	testenv.RunGit(t, d.Top, "config", "core.bare", "true")
	if r.Valid() {
		t.Error("repo still valid after its config changed")
	}
}
