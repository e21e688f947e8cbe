package wire

import "testing"

// TestProviderTables: every dialect has a table, of its own dialect,
// that sets what the shared code asks of every provider, and what its
// kind of history (turns or entries, a prompt in the history or in a
// field) needs.
func TestProviderTables(t *testing.T) {
	seen := map[*provider]bool{}
	for _, d := range Dialects {
		p := d.provider()
		if p == nil {
			t.Fatalf("%s: no table", d)
		}
		if p.dialect != d || seen[p] {
			t.Errorf("%s: the table of %s", d, p.dialect)
		}
		seen[p] = true
		missing := func(what string, ok bool) {
			if !ok {
				t.Errorf("%s: no %s", d, what)
			}
		}
		missing("historyKey", p.historyKey != "")
		missing("entry", p.entry != "")
		missing("readEntry", p.readEntry != nil)
		missing("track", p.track != nil)
		missing("userMessage", p.userMessage != nil)
		missing("paths", len(p.paths) > 0)
		missing("emptyRule", p.emptyRule != "" && p.emptyWording != "")
		missing("validate", p.validate != nil)
		missing("toolFields", p.toolFields != nil)
		missing("both toolBlocks and toolRefs", (p.toolBlocks == nil) == (p.toolRefs == nil))
		missing("stub", p.stub != nil)
		missing("toolLists", len(p.toolLists) > 0)
		missing("toolDecl", p.toolDecl != nil)
		missing("promptKey", (p.promptKey == nil) == p.promptInHistory)
		missing("hasPrompt", p.hasPrompt != nil)
		missing("addPromptText", p.addPromptText != nil)
		missing("modelRole", p.modelRole != "")
		missing("writeResult", p.writeResult != nil)
		missing("declare", p.declare != nil)
		missing("callType and resultType", p.callType != "" && p.resultType != "")
		missing("summary", p.summary != nil)
		if p.summary != nil {
			// The summary message is a user message the reader takes, of
			// the summary's text alone.
			f, ok := summaryFacts(p, "[Summary of 2 earlier messages] INC-4711")
			missing("a summary message the reader takes", ok && f.role == "user" && p.realUser(&f) && summaryText(&f) == "[Summary of 2 earlier messages] INC-4711")
		}
		if p.turns {
			missing("turnKey, textBlock and callBlock", p.turnKey != "" && p.textBlock != nil && p.callBlock != nil)
		} else {
			missing("writeEntries", p.writeEntries != nil)
		}
		if k, ok := d.messagesKey(); !ok || k != p.historyKey {
			t.Errorf("%s: messagesKey %q", d, k)
		}
	}
	if p := Dialect("no-such-dialect").provider(); p != nil {
		t.Errorf("an unknown dialect has the table of %s", p.dialect)
	}
}
