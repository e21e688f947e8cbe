package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard/wire"
)

// The generated sweep builds request bodies in all five dialects from one
// abstract agent conversation and prunes each through the command.
//
//	go test ./cmd/pruneguard -run Generated                      200 bodies (30 with -race or -short), a sample of the flag matrix
//	go test ./cmd/pruneguard -run Generated -long                 3000 bodies, the whole matrix
//	PRUNEGUARD_GEN=500 go test ./cmd/pruneguard -run Generated    500 bodies, the whole matrix
//
// PRUNEGUARD_SEED picks another seed.
var long = flag.Bool("long", false, "generated sweep: many bodies, every flag combination")

// ---- the abstract conversation ---------------------------------------------

type genTool struct {
	name      string
	annotated bool
	readOnly  bool
	openWorld bool
}

type genCall struct {
	id   string // wire id (may repeat across turns in OpenAI dialects)
	tool string
	args map[string]any
	out  string
	err  bool
}

// genStep is one assistant step: optional reasoning, text before and after,
// and a batch of calls answered in resultOrder (nil results: pending).
type genStep struct {
	reasoning   bool
	textBefore  string
	textAfter   string
	calls       []genCall
	resultOrder []int
	pending     bool
	server      bool // Anthropic: a web search the server ran in this turn
	legacy      bool // Chat: function_call / role "function"
}

type genTask struct {
	text       string
	attachment bool
	steps      []genStep
	final      string // the assistant's closing text; "" when the loop is still running
}

type genConv struct {
	d          wire.Dialect
	system     string
	tools      []genTool
	tasks      []genTask
	thinking   bool // reasoning on (every step carries it)
	reuseIDs   bool
	geminiIDs  bool
	storeFalse bool
	choice     string // a tool named in the tool choice, or ""
	manifest   bool   // annotations come from a --tools-manifest
}

var words = strings.Fields(`the a file line test error module build config value result page item
	order user account flight price status log output function return error handler request body token
	budget cache index search query weather city repo branch commit diff patch stack trace`)

func sentence(r *rand.Rand, n int) string {
	var sb strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(words[r.IntN(len(words))])
	}
	return sb.String()
}

func genID(r *rand.Rand, prefix string, n int) string {
	const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = alnum[r.IntN(len(alnum))]
	}
	return prefix + string(b)
}

func genConversation(r *rand.Rand, d wire.Dialect) *genConv {
	c := &genConv{d: d}
	if r.IntN(4) > 0 {
		c.system = "You are a helpful agent. " + sentence(r, 5+r.IntN(30))
	}
	names := []string{"read_file", "search", "run_tests", "edit_file", "get_weather", "list_dir", "book_flight", "sql_query"}
	r.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	nt := 1 + r.IntN(len(names))
	annotate := r.IntN(3) // 0 none, 1 some, 2 all
	for _, n := range names[:nt] {
		t := genTool{name: n}
		if annotate == 2 || annotate == 1 && r.IntN(2) == 0 {
			t.annotated, t.readOnly, t.openWorld = true, r.IntN(3) > 0, r.IntN(2) == 0
		}
		c.tools = append(c.tools, t)
	}
	c.manifest = annotate > 0 && (d == wire.Gemini || d == wire.Bedrock || r.IntN(5) == 0)
	c.thinking = r.IntN(2) == 0
	c.reuseIDs = (d == wire.OpenAIChat || d == wire.OpenAIResponses) && r.IntN(3) == 0
	c.geminiIDs = r.IntN(2) == 0
	c.storeFalse = r.IntN(2) == 0
	if r.IntN(4) == 0 {
		c.choice = c.tools[r.IntN(len(c.tools))].name
	}
	ntasks := 1 + r.IntN(3)
	for ti := 0; ti < ntasks; ti++ {
		task := genTask{text: sentence(r, 3+r.IntN(40)), attachment: r.IntN(5) == 0}
		nsteps := r.IntN(6)
		for si := 0; si < nsteps; si++ {
			st := genStep{reasoning: c.thinking}
			if r.IntN(3) == 0 {
				st.textBefore = sentence(r, 2+r.IntN(15))
			}
			if r.IntN(6) == 0 {
				st.textAfter = sentence(r, 2+r.IntN(8))
			}
			n := 1
			if r.IntN(2) == 0 {
				n = 2 + r.IntN(3)
			}
			if d == wire.OpenAIChat && n == 1 && r.IntN(8) == 0 {
				st.legacy = true
			}
			if d == wire.Anthropic && r.IntN(6) == 0 {
				st.server = true
			}
			for k := 0; k < n; k++ {
				t := c.tools[r.IntN(len(c.tools))]
				call := genCall{tool: t.name, args: map[string]any{"q": sentence(r, 1+r.IntN(4)), "n": r.IntN(100)}}
				size := 5 + r.IntN(60)
				if r.IntN(3) == 0 {
					size = 100 + r.IntN(900)
				}
				call.out = sentence(r, size)
				call.err = r.IntN(15) == 0
				switch {
				case c.reuseIDs:
					call.id = "call_" + strconv.Itoa(k)
				case d == wire.OpenAIChat || d == wire.OpenAIResponses:
					call.id = genID(r, "call_", 24)
				case d == wire.Anthropic:
					call.id = genID(r, "toolu_01", 22)
				case d == wire.Bedrock:
					call.id = genID(r, "tooluse_", 22)
				case d == wire.Gemini:
					if c.geminiIDs {
						call.id = genID(r, "", 8)
					}
				}
				st.calls = append(st.calls, call)
			}
			st.resultOrder = r.Perm(n)
			if d == wire.Gemini && !c.geminiIDs {
				for k := range st.resultOrder {
					st.resultOrder[k] = k
				}
			}
			task.steps = append(task.steps, st)
		}
		last := ti == ntasks-1
		switch {
		case last && len(task.steps) > 0 && r.IntN(4) == 0:
			task.steps[len(task.steps)-1].pending = true
		case last && len(task.steps) > 0 && r.IntN(3) == 0:
			// the loop is running: the body ends on the results
		case !last && len(task.steps) > 0 && d != wire.Gemini && d != wire.Bedrock && r.IntN(6) == 0:
			// the user speaks again right after the results
		default:
			task.final = sentence(r, 3+r.IntN(40))
		}
		c.tasks = append(c.tasks, task)
	}
	// A body that ends on an assistant text gets a next user question.
	if t := c.tasks[len(c.tasks)-1]; t.final != "" {
		c.tasks = append(c.tasks, genTask{text: sentence(r, 3+r.IntN(10))})
	}
	return c
}

// ---- rendering -------------------------------------------------------------

func (c *genConv) schema() map[string]any {
	return map[string]any{"type": "object", "properties": map[string]any{
		"q": map[string]any{"type": "string", "description": "what to look for"},
		"n": map[string]any{"type": "integer"},
	}, "required": []any{"q"}}
}

func (t genTool) annotations() map[string]any {
	return map[string]any{"readOnlyHint": t.readOnly, "openWorldHint": t.openWorld}
}

func argString(a map[string]any) string {
	b, _ := json.Marshal(a)
	return string(b)
}

// render returns the body and, when the conversation carries them, an
// MCP tools/list manifest.
func (c *genConv) render(r *rand.Rand) (body, manifest []byte) {
	var top map[string]any
	switch c.d {
	case wire.OpenAIChat:
		top = c.renderChat(r)
	case wire.OpenAIResponses:
		top = c.renderResponses(r)
	case wire.Anthropic:
		top = c.renderAnthropic(r)
	case wire.Gemini:
		top = c.renderGemini(r)
	case wire.Bedrock:
		top = c.renderBedrock(r)
	}
	body, err := json.Marshal(top)
	if err != nil {
		panic(err)
	}
	if c.manifest {
		var tools []any
		for _, t := range c.tools {
			mt := map[string]any{"name": t.name, "inputSchema": c.schema()}
			if t.annotated {
				mt["annotations"] = t.annotations()
			}
			tools = append(tools, mt)
		}
		manifest, _ = json.Marshal(map[string]any{"tools": tools})
	}
	return body, manifest
}

func (c *genConv) bodyAnnotations() bool { return !c.manifest }

func (c *genConv) renderChat(r *rand.Rand) map[string]any {
	var msgs []any
	if c.system != "" {
		role := "system"
		if r.IntN(3) == 0 {
			role = "developer"
		}
		msgs = append(msgs, map[string]any{"role": role, "content": c.system})
	}
	for _, task := range c.tasks {
		if task.attachment {
			msgs = append(msgs, map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "text", "text": task.text},
				map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64,iVBORw0KGgo" + genID(r, "", 40)}},
			}})
		} else {
			msgs = append(msgs, map[string]any{"role": "user", "content": task.text})
		}
		for _, st := range task.steps {
			if st.legacy {
				call := st.calls[0]
				msgs = append(msgs, map[string]any{"role": "assistant", "content": nil,
					"function_call": map[string]any{"name": call.tool, "arguments": argString(call.args)}})
				if !st.pending {
					msgs = append(msgs, map[string]any{"role": "function", "name": call.tool, "content": call.out})
				}
				continue
			}
			var tcs []any
			for _, call := range st.calls {
				tcs = append(tcs, map[string]any{"id": call.id, "type": "function",
					"function": map[string]any{"name": call.tool, "arguments": argString(call.args)}})
			}
			var content any
			if st.textBefore != "" {
				content = st.textBefore
			}
			msgs = append(msgs, map[string]any{"role": "assistant", "content": content, "tool_calls": tcs})
			if st.pending {
				continue
			}
			for _, k := range st.resultOrder {
				call := st.calls[k]
				var out any = call.out
				if r.IntN(4) == 0 {
					out = []any{map[string]any{"type": "text", "text": call.out}}
				}
				msgs = append(msgs, map[string]any{"role": "tool", "tool_call_id": call.id, "content": out})
			}
		}
		if task.final != "" {
			msgs = append(msgs, map[string]any{"role": "assistant", "content": task.final})
		}
	}
	var tools []any
	for _, t := range c.tools {
		fn := map[string]any{"name": t.name, "description": "tool " + t.name, "parameters": c.schema()}
		if t.annotated && c.bodyAnnotations() {
			fn["annotations"] = t.annotations()
		}
		tools = append(tools, map[string]any{"type": "function", "function": fn})
	}
	top := map[string]any{"model": "gpt-4o", "messages": msgs, "tools": tools}
	if c.choice != "" {
		top["tool_choice"] = map[string]any{"type": "function", "function": map[string]any{"name": c.choice}}
	} else if r.IntN(2) == 0 {
		top["tool_choice"] = "auto"
	}
	if r.IntN(2) == 0 {
		top["parallel_tool_calls"] = true
	}
	return top
}

func (c *genConv) renderResponses(r *rand.Rand) map[string]any {
	var items []any
	top := map[string]any{"model": "gpt-5"}
	if c.system != "" {
		if r.IntN(2) == 0 {
			top["instructions"] = c.system
		} else {
			items = append(items, map[string]any{"role": "developer", "content": c.system})
		}
	}
	reasoning := func() map[string]any {
		return map[string]any{"type": "reasoning", "id": genID(r, "rs_", 30), "summary": []any{},
			"encrypted_content": "gAAAAA" + genID(r, "", 60)}
	}
	assistant := func(text string) map[string]any {
		return map[string]any{"type": "message", "role": "assistant", "id": genID(r, "msg_", 30), "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}
	}
	for _, task := range c.tasks {
		if task.attachment {
			items = append(items, map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "input_text", "text": task.text},
				map[string]any{"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo" + genID(r, "", 40)},
			}})
		} else if r.IntN(2) == 0 {
			items = append(items, map[string]any{"role": "user", "content": task.text})
		} else {
			items = append(items, map[string]any{"type": "message", "role": "user",
				"content": []any{map[string]any{"type": "input_text", "text": task.text}}})
		}
		for _, st := range task.steps {
			if st.reasoning {
				items = append(items, reasoning())
			}
			if st.textBefore != "" {
				items = append(items, assistant(st.textBefore))
			}
			for _, call := range st.calls {
				items = append(items, map[string]any{"type": "function_call", "id": genID(r, "fc_", 30), "call_id": call.id,
					"name": call.tool, "arguments": argString(call.args), "status": "completed"})
			}
			if st.pending {
				continue
			}
			for _, k := range st.resultOrder {
				call := st.calls[k]
				items = append(items, map[string]any{"type": "function_call_output", "call_id": call.id, "output": call.out})
			}
		}
		if task.final != "" {
			if c.thinking {
				items = append(items, reasoning())
			}
			items = append(items, assistant(task.final))
		}
	}
	var tools []any
	for _, t := range c.tools {
		tl := map[string]any{"type": "function", "name": t.name, "description": "tool " + t.name, "parameters": c.schema(), "strict": false}
		if t.annotated && c.bodyAnnotations() {
			tl["annotations"] = t.annotations()
		}
		tools = append(tools, tl)
	}
	if r.IntN(4) == 0 {
		tools = append(tools, map[string]any{"type": "web_search"})
	}
	top["input"] = items
	top["tools"] = tools
	if c.storeFalse {
		top["store"] = false
		top["include"] = []any{"reasoning.encrypted_content"}
	}
	if c.choice != "" {
		top["tool_choice"] = map[string]any{"type": "function", "name": c.choice}
	}
	return top
}

func (c *genConv) renderAnthropic(r *rand.Rand) map[string]any {
	var msgs []any
	thinking := func() map[string]any {
		if r.IntN(8) == 0 {
			return map[string]any{"type": "redacted_thinking", "data": "EmwKAhgB" + genID(r, "", 80)}
		}
		return map[string]any{"type": "thinking", "thinking": sentence(r, 5+r.IntN(30)), "signature": "ErUBCkYIBxgCKkA" + genID(r, "", 80)}
	}
	text := func(s string) map[string]any { return map[string]any{"type": "text", "text": s} }
	var pendingUser []any // blocks of the user turn being built
	flushUser := func() {
		if len(pendingUser) > 0 {
			msgs = append(msgs, map[string]any{"role": "user", "content": pendingUser})
			pendingUser = nil
		}
	}
	for _, task := range c.tasks {
		var blocks []any
		blocks = append(blocks, text(task.text))
		if task.attachment {
			if r.IntN(2) == 0 {
				blocks = append(blocks, map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo" + genID(r, "", 40)}})
			} else {
				blocks = append(blocks, map[string]any{"type": "document", "source": map[string]any{"type": "base64", "media_type": "application/pdf", "data": "JVBERi0x" + genID(r, "", 40)}})
			}
		}
		if len(pendingUser) > 0 && r.IntN(2) == 0 {
			// the next question rides in the tool-result turn
			pendingUser = append(pendingUser, blocks...)
		} else if len(pendingUser) > 0 {
			flushUser()
			msgs = append(msgs, map[string]any{"role": "user", "content": blocks}) // merged by the API
		} else if !task.attachment && r.IntN(2) == 0 {
			msgs = append(msgs, map[string]any{"role": "user", "content": task.text})
		} else {
			msgs = append(msgs, map[string]any{"role": "user", "content": blocks})
		}
		flushUser()
		for _, st := range task.steps {
			flushUser()
			var content []any
			if st.reasoning {
				content = append(content, thinking())
			}
			if st.textBefore != "" {
				content = append(content, text(st.textBefore))
			}
			if st.server {
				id := genID(r, "srvtoolu_01", 22)
				content = append(content,
					map[string]any{"type": "server_tool_use", "id": id, "name": "web_search", "input": map[string]any{"query": sentence(r, 3)}},
					map[string]any{"type": "web_search_tool_result", "tool_use_id": id, "content": []any{
						map[string]any{"type": "web_search_result", "url": "https://example.com/" + genID(r, "", 6), "title": sentence(r, 3), "encrypted_content": genID(r, "", 50)}}})
			}
			for _, call := range st.calls {
				content = append(content, map[string]any{"type": "tool_use", "id": call.id, "name": call.tool, "input": call.args})
			}
			if st.textAfter != "" {
				content = append(content, text(st.textAfter))
			}
			msgs = append(msgs, map[string]any{"role": "assistant", "content": content})
			if st.pending {
				continue
			}
			for _, k := range st.resultOrder {
				call := st.calls[k]
				res := map[string]any{"type": "tool_result", "tool_use_id": call.id}
				if r.IntN(2) == 0 {
					res["content"] = call.out
				} else {
					res["content"] = []any{text(call.out)}
				}
				if call.err {
					res["is_error"] = true
				}
				pendingUser = append(pendingUser, res)
			}
			if r.IntN(8) == 0 {
				pendingUser = append(pendingUser, text("(continue)"))
			}
		}
		if task.final != "" {
			flushUser()
			var content []any
			if c.thinking && r.IntN(2) == 0 {
				content = append(content, thinking())
			}
			if r.IntN(6) == 0 {
				id := genID(r, "srvtoolu_01", 22)
				content = append(content,
					map[string]any{"type": "server_tool_use", "id": id, "name": "web_search", "input": map[string]any{"query": sentence(r, 3)}},
					map[string]any{"type": "web_search_tool_result", "tool_use_id": id, "content": []any{}})
			}
			content = append(content, text(task.final))
			msgs = append(msgs, map[string]any{"role": "assistant", "content": content})
		}
	}
	flushUser()
	var tools []any
	for _, t := range c.tools {
		tl := map[string]any{"name": t.name, "description": "tool " + t.name, "input_schema": c.schema()}
		if t.annotated && c.bodyAnnotations() {
			tl["annotations"] = t.annotations()
		}
		tools = append(tools, tl)
	}
	tools = append(tools, map[string]any{"type": "web_search_20250305", "name": "web_search", "max_uses": 5})
	top := map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 8192, "messages": msgs, "tools": tools}
	if c.system != "" {
		if r.IntN(2) == 0 {
			top["system"] = c.system
		} else {
			top["system"] = []any{map[string]any{"type": "text", "text": c.system, "cache_control": map[string]any{"type": "ephemeral"}}}
		}
	}
	if c.thinking {
		top["thinking"] = map[string]any{"type": "enabled", "budget_tokens": 4096}
	} else if c.choice != "" {
		top["tool_choice"] = map[string]any{"type": "tool", "name": c.choice}
	}
	return top
}

func (c *genConv) renderGemini(r *rand.Rand) map[string]any {
	var contents []any
	for _, task := range c.tasks {
		parts := []any{map[string]any{"text": task.text}}
		if task.attachment {
			parts = append(parts, map[string]any{"inlineData": map[string]any{"mimeType": "image/png", "data": "iVBORw0KGgo" + genID(r, "", 40)}})
		}
		contents = append(contents, map[string]any{"role": "user", "parts": parts})
		for _, st := range task.steps {
			var parts []any
			if st.reasoning && r.IntN(2) == 0 {
				parts = append(parts, map[string]any{"text": sentence(r, 5+r.IntN(20)), "thought": true})
			}
			if st.textBefore != "" {
				parts = append(parts, map[string]any{"text": st.textBefore})
			}
			for k, call := range st.calls {
				fc := map[string]any{"name": call.tool, "args": call.args}
				if call.id != "" {
					fc["id"] = call.id
				}
				p := map[string]any{"functionCall": fc}
				if k == 0 && c.thinking {
					p["thoughtSignature"] = "CiQB" + genID(r, "", 60)
				}
				parts = append(parts, p)
			}
			contents = append(contents, map[string]any{"role": "model", "parts": parts})
			if st.pending {
				continue
			}
			var resp []any
			for _, k := range st.resultOrder {
				call := st.calls[k]
				fr := map[string]any{"name": call.tool, "response": map[string]any{"output": call.out}}
				if call.err {
					fr["response"] = map[string]any{"error": call.out}
				}
				if call.id != "" {
					fr["id"] = call.id
				}
				resp = append(resp, map[string]any{"functionResponse": fr})
			}
			role := "user"
			if r.IntN(6) == 0 {
				role = "function"
			}
			contents = append(contents, map[string]any{"role": role, "parts": resp})
		}
		if task.final != "" {
			p := map[string]any{"text": task.final}
			if c.thinking && r.IntN(2) == 0 {
				p["thoughtSignature"] = "CiQB" + genID(r, "", 60)
			}
			contents = append(contents, map[string]any{"role": "model", "parts": []any{p}})
		}
	}
	var decls []any
	for _, t := range c.tools {
		decls = append(decls, map[string]any{"name": t.name, "description": "tool " + t.name, "parameters": c.schema()})
	}
	top := map[string]any{"contents": contents, "tools": []any{map[string]any{"functionDeclarations": decls}},
		"generationConfig": map[string]any{"temperature": 0.2}}
	if c.thinking {
		top["generationConfig"] = map[string]any{"thinkingConfig": map[string]any{"includeThoughts": true}}
	}
	if c.system != "" {
		top["systemInstruction"] = map[string]any{"parts": []any{map[string]any{"text": c.system}}}
	}
	if c.choice != "" {
		top["tool_config"] = map[string]any{"function_calling_config": map[string]any{"mode": "ANY", "allowed_function_names": []any{c.choice}}}
	}
	return top
}

func (c *genConv) renderBedrock(r *rand.Rand) map[string]any {
	var msgs []any
	for _, task := range c.tasks {
		content := []any{map[string]any{"text": task.text}}
		if task.attachment {
			if r.IntN(2) == 0 {
				content = append(content, map[string]any{"image": map[string]any{"format": "png", "source": map[string]any{"bytes": "iVBORw0KGgo" + genID(r, "", 40)}}})
			} else {
				content = append(content, map[string]any{"document": map[string]any{"format": "pdf", "name": "spec", "source": map[string]any{"bytes": "JVBERi0x" + genID(r, "", 40)}}})
			}
		}
		msgs = append(msgs, map[string]any{"role": "user", "content": content})
		for _, st := range task.steps {
			var content []any
			if st.reasoning {
				if r.IntN(8) == 0 {
					content = append(content, map[string]any{"reasoningContent": map[string]any{"redactedContent": "EmwKAhgB" + genID(r, "", 40)}})
				} else {
					content = append(content, map[string]any{"reasoningContent": map[string]any{"reasoningText": map[string]any{"text": sentence(r, 5+r.IntN(20)), "signature": "ErUB" + genID(r, "", 60)}}})
				}
			}
			if st.textBefore != "" {
				content = append(content, map[string]any{"text": st.textBefore})
			}
			for _, call := range st.calls {
				content = append(content, map[string]any{"toolUse": map[string]any{"toolUseId": call.id, "name": call.tool, "input": call.args}})
			}
			msgs = append(msgs, map[string]any{"role": "assistant", "content": content})
			if st.pending {
				continue
			}
			var res []any
			for _, k := range st.resultOrder {
				call := st.calls[k]
				var rc []any
				if r.IntN(2) == 0 {
					rc = []any{map[string]any{"json": map[string]any{"output": call.out}}}
				} else {
					rc = []any{map[string]any{"text": call.out}}
				}
				tr := map[string]any{"toolUseId": call.id, "content": rc}
				if call.err {
					tr["status"] = "error"
				} else if r.IntN(2) == 0 {
					tr["status"] = "success"
				}
				res = append(res, map[string]any{"toolResult": tr})
			}
			msgs = append(msgs, map[string]any{"role": "user", "content": res})
		}
		if task.final != "" {
			msgs = append(msgs, map[string]any{"role": "assistant", "content": []any{map[string]any{"text": task.final}}})
		}
	}
	var tools []any
	for _, t := range c.tools {
		tools = append(tools, map[string]any{"toolSpec": map[string]any{"name": t.name, "description": "tool " + t.name,
			"inputSchema": map[string]any{"json": c.schema()}}})
	}
	tc := map[string]any{"tools": tools}
	if c.choice != "" {
		tc["toolChoice"] = map[string]any{"tool": map[string]any{"name": c.choice}}
	} else if r.IntN(2) == 0 {
		tc["toolChoice"] = map[string]any{"auto": map[string]any{}}
	}
	top := map[string]any{"modelId": "anthropic.claude-3-5-sonnet", "messages": msgs, "toolConfig": tc,
		"inferenceConfig": map[string]any{"maxTokens": 4096}}
	if c.system != "" {
		top["system"] = []any{map[string]any{"text": c.system}}
	}
	return top
}

// ---- the sweep -------------------------------------------------------------

func pendingRule(v wire.RuleViolation) bool { return strings.HasSuffix(v.Rule, "/pending-calls") }

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

var reportFields = []string{"dialect", "policy", "boundary", "unannotated", "budget", "input_tokens", "output_tokens",
	"outcome", "evicted", "stubbed", "withdrawn", "tombstones", "refused", "prune_ms"}

type genCase struct {
	name     string
	d        wire.Dialect
	body     []byte
	manifest string // path, or ""
}

// checkGenerated checks one generated body and prunes it with the given
// flag combinations, reporting every failure through t.
func checkGenerated(t *testing.T, gc genCase, pcts []int, combos [][]string) int {
	t.Helper()
	shown := false
	fail := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if !shown {
			msg += "\ninput " + string(gc.body)
			shown = true
			if dir := os.Getenv("PRUNEGUARD_DUMP"); dir != "" {
				name := strings.NewReplacer(" ", "-", "(", "", ")", "").Replace(gc.name)
				os.WriteFile(dir+"/"+name+".json", gc.body, 0o644)
				if gc.manifest != "" {
					b, _ := os.ReadFile(gc.manifest)
					os.WriteFile(dir+"/"+name+".manifest.json", b, 0o644)
				}
			}
		}
		t.Errorf("%s: %s", gc.name, msg)
	}
	if d, err := wire.Detect(gc.body); err != nil || d != gc.d {
		fail("detected as %q (%v)", d, err)
		return 0
	}
	in, err := wire.Read(gc.body, gc.d)
	if err != nil {
		fail("Read: %v", err)
		return 0
	}
	inV := in.Validate()
	for _, v := range inV {
		if !pendingRule(v) {
			fail("input violation %+v", v)
			return 0
		}
	}
	if back, err := in.Marshal(); err != nil || !jsonEqual(back, gc.body) {
		fail("Read/Marshal does not round trip (%v)", err)
	}
	total := wire.Tokens(in, nil)
	runs := 0
	for _, pct := range pcts {
		budget := total * pct / 100
		for _, combo := range combos {
			args := append([]string{"prune", "--budget", strconv.Itoa(budget)}, combo...)
			if gc.manifest != "" {
				args = append(args, "--tools-manifest", gc.manifest)
			}
			args = append(args, "-")
			var out, errb bytes.Buffer
			var code int
			func() {
				defer func() {
					if p := recover(); p != nil {
						fail("%v: panic: %v", args, p)
						code = -1
					}
				}()
				code = run(args, bytes.NewReader(gc.body), &out, &errb)
			}()
			runs++
			if code != 0 && code != 3 {
				if code != -1 {
					fail("%v: exit %d: %s", args, code, errb.String())
				}
				continue
			}
			line := strings.TrimSpace(errb.String())
			if strings.Count(line, "\n") > 0 {
				fail("%v: more than one line on stderr: %q", args, line)
				continue
			}
			var fields map[string]json.RawMessage
			var rep Report
			if err := json.Unmarshal([]byte(line), &fields); err != nil {
				fail("%v: report is not JSON: %v: %q", args, err, line)
				continue
			}
			json.Unmarshal([]byte(line), &rep)
			for _, f := range reportFields {
				if v, ok := fields[f]; !ok || string(v) == "null" {
					fail("%v: report lacks %q: %s", args, f, line)
				}
			}
			if rep.Dialect != gc.d {
				fail("%v: report dialect %q", args, rep.Dialect)
			}
			if rep.InputTokens != total || rep.OutputTokens > rep.InputTokens || rep.Budget != budget {
				fail("%v: tokens %d -> %d (input %d, budget %d)", args, rep.InputTokens, rep.OutputTokens, total, rep.Budget)
			}
			if (code == 0) != (rep.OutputTokens <= budget) {
				fail("%v: exit %d with %d tokens for budget %d", args, code, rep.OutputTokens, budget)
			}
			ob, err := wire.Read(out.Bytes(), rep.Dialect)
			if err != nil {
				fail("%v: output does not read as %s: %v", args, rep.Dialect, err)
				continue
			}
			if n := wire.Tokens(ob, nil); n != rep.OutputTokens {
				fail("%v: output holds %d tokens, report says %d", args, n, rep.OutputTokens)
			}
			if nv := wire.NewViolations(inV, ob.Validate()); len(nv) > 0 {
				fail("%v: output worse than input: %+v\nreport %s\noutput %s", args, nv, line, out.String())
			}
			var cout, cerr bytes.Buffer
			cc := run([]string{"check", "--dialect", string(rep.Dialect), "-"}, bytes.NewReader(out.Bytes()), &cout, &cerr)
			if cc == 2 {
				fail("%v: check of the output exits 2: %s", args, cerr.String())
			}
		}
	}
	return runs
}

// TestGeneratedSweep prunes generated bodies of every dialect at 10% to
// 100% of their tokens with every policy, both assumptions about
// unannotated tools, both boundary modes, with and without
// --drop-unused-schemas.
func TestGeneratedSweep(t *testing.T) {
	n, full := 200, false
	if raceOn || testing.Short() {
		n = 30
	}
	if *long {
		n, full = 3000, true
	}
	if s := os.Getenv("PRUNEGUARD_GEN"); s != "" {
		n, _ = strconv.Atoi(s)
		full = true
	}
	var combos [][]string
	for _, pol := range []string{"oldest", "largest", "keep-last-tools"} {
		for _, un := range []string{"irreducible", "regenerable"} {
			for _, bd := range []string{"relaxed", "strict"} {
				for _, drop := range []bool{false, true} {
					c := []string{"--policy", pol, "--unannotated", un, "--boundary", bd}
					if pol == "keep-last-tools" {
						c = append(c, "--keep", "2")
					}
					if drop {
						c = append(c, "--drop-unused-schemas")
					}
					combos = append(combos, c)
				}
			}
		}
	}
	seed := uint64(20250601)
	if s := os.Getenv("PRUNEGUARD_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(seed, 7))
	runs, fails := 0, 0
	for i := 0; i < n; i++ {
		d := wire.Dialects[i%len(wire.Dialects)]
		conv := genConversation(r, d)
		body, manifest := conv.render(r)
		gc := genCase{name: fmt.Sprintf("body %d (%s)", i, d), d: d, body: body}
		if manifest != nil {
			gc.manifest = fmt.Sprintf("%s/manifest-%d.json", dir, i)
			if err := os.WriteFile(gc.manifest, manifest, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		cs := combos
		if !full {
			// a sample: every policy, the other flags drawn
			cs = nil
			for p := 0; p < 3; p++ {
				cs = append(cs, combos[p*8+r.IntN(8)])
			}
		}
		runs += checkGenerated(t, gc, []int{10, 25, 50, 75, 100}, cs)
		if t.Failed() {
			fails++ // counts this body and every one after the first failure
			if fails > 5 {
				t.Fatalf("stopping after failures in %d bodies", fails)
			}
		}
	}
	t.Logf("%d bodies, %d prune runs", n, runs)
}
