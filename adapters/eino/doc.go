// Package einoguard guards the context window of agents built with
// github.com/cloudwego/eino: before each model call it prunes the message
// list under a token budget, and only in ways the pruneguard gates allow.
// A tool call never loses its result nor a result its call, a call and its
// parallel siblings go together, results the MCP annotations call
// irreducible (of tools that change the world or read an open one) stay,
// and so do the system prompt and the latest user message.
//
// A [Session] follows one conversation. It maps eino's messages to
// pruneguard events (an assistant message's ToolCalls become calls under
// eino's call ids, a tool message answers its ToolCallID, reasoning
// content stays with the message that carries it) and the guard's
// decisions back to eino's types: evicted messages leave the list,
// cleared tool results keep their call id under a placeholder (or, when
// their content was spilled, the pointer's text), a summary takes its
// run's place as a user message, and tombstones and the pointers of
// spilled content that left go into one note. The budget counts the list
// as sent, with the session's counter. It plugs in where eino lets a
// caller rewrite the messages before a model call:
//
//   - [Session.Modifier] for react.AgentConfig's MessageModifier (or
//     MessageRewriter) in github.com/cloudwego/eino/flow/agent/react;
//   - [Session.Middleware] for adk.ChatModelAgentConfig's Middlewares;
//   - [PreHandler] for a chat model node of a compose graph.
//
// Wiring it into a react agent:
//
//	tools, _ := einoguard.ToolsWith(ctx, []tool.BaseTool{readFile, writeFile}, map[string]pruneguard.Tool{
//		"read_file":  {Annotations: pruneguard.Annotations{ReadOnlyHint: pruneguard.Bool(true), OpenWorldHint: pruneguard.Bool(false)}, Scope: "repo"},
//		"write_file": {Scope: "repo"},
//	})
//	s, err := einoguard.New(einoguard.Config{
//		Guard: pruneguard.Guard{Budget: 60000, Policy: pruneguard.KeepLastToolUses{Keep: 3, Stub: true}},
//		Tools: tools,
//	})
//	agent, err := react.NewAgent(ctx, &react.AgentConfig{
//		ToolCallingModel: chatModel,
//		ToolsConfig:      compose.ToolsNodeConfig{Tools: []tool.BaseTool{readFile, writeFile}},
//		MessageModifier:  s.Modifier(),
//	})
//
// Tools the session is not told about take MCP's default annotations:
// they count as mutating, with a scope of everything, and their results
// are never cleared; a tool's spec ([ToolsWith]) is the core's Tool, so
// it says what the tool touches (Scope) as well as how it behaves.
//
// With Guard.Spill set, content that cannot be had again is spilled
// before it leaves, and the model reads it back with the recall tool:
// add [RecallTool] to the agent's tools.
//
// A session outlives its process with [Session.Save] and
// [Session.Restore]; with Config.Sessions, a store the replicas of a
// fleet share, any replica serves the conversation's next call and sends
// what one session would have sent (see [Session.Prune]).
package einoguard
