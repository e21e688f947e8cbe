package wire

// Rule codes for Gemini.
const (
	// RuleGeminiCallTurnPosition: a functionCall turn is first or follows a
	// model turn.
	RuleGeminiCallTurnPosition = "gemini/call-turn-position"
	// RuleGeminiResponseTurnPosition: a functionResponse turn does not
	// directly follow a functionCall turn.
	RuleGeminiResponseTurnPosition = "gemini/response-turn-position"
	// RuleGeminiResponseCount: the response parts do not match the call
	// parts of the call turn in number (or in id, when both carry ids).
	RuleGeminiResponseCount = "gemini/response-count"
	// RuleGeminiCallWithoutResponse: a functionCall turn is followed by a
	// turn without functionResponse parts.
	RuleGeminiCallWithoutResponse = "gemini/call-without-response"
	// RuleGeminiMissingThoughtSignature: in the current turn (after the last
	// real user message), a functionCall step's first call part has no
	// thoughtSignature while other calls in the body carry one.
	RuleGeminiMissingThoughtSignature = "gemini/missing-thought-signature"
	// RuleGeminiFirstNotUser: the first content is a model turn.
	RuleGeminiFirstNotUser = "gemini/first-not-user"
	// RuleGeminiPendingCalls: the body ends on a functionCall turn.
	RuleGeminiPendingCalls = "gemini/pending-calls"
	// RuleGeminiEmptyContents: the contents array is empty.
	RuleGeminiEmptyContents = "gemini/empty-contents"
)

// Rule codes for the tools array and the tool choice. They concern the
// request outside its history, which a prune changes when it withdraws
// schemas; their violations carry index 0 unless a message is to blame.
const (
	// RuleGeminiUnknownAllowedFunction: the function calling config allows
	// a function no functionDeclarations entry declares.
	RuleGeminiUnknownAllowedFunction = "gemini/unknown-allowed-function"
)

// validateGemini checks the content turns cs: a function call turn right
// after a user or function response turn, answered by the turn after it
// part for part, thought signatures in the current turn, and a user turn
// first.
func validateGemini(cs []*facts, sc scope, v *violations) {
	o := sc.off
	for i, c := range cs {
		calls, resps := int(c.ncalls), int(c.nresults)
		if i == 0 && sc.atStart && !isGeminiUserRole(c.role) && calls == 0 {
			v.add(RuleGeminiFirstNotUser, o+i, "Please ensure that multiturn requests alternate between user and model, starting with a user turn (first content should be with role 'user').")
		}
		if calls > 0 {
			if (i == 0 && sc.atStart) || (i > 0 && !isGeminiUserRole(cs[i-1].role)) {
				v.add(RuleGeminiCallTurnPosition, o+i,
					"Please ensure that function call turn comes immediately after a user turn or after a function response turn.")
			}
			switch {
			case i == len(cs)-1 && sc.atEnd:
				v.add(RuleGeminiPendingCalls, o+i,
					"Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.")
			case i < len(cs)-1 && cs[i+1].nresults == 0:
				v.add(RuleGeminiCallWithoutResponse, o+i,
					"Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.")
			}
			if sc.signedBody && o+i > sc.lastUser {
				for k, p := range c.parts {
					if p.kind != PartCall {
						continue
					}
					if !p.signed {
						v.add(RuleGeminiMissingThoughtSignature, o+i,
							"Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:%s` , position %d.",
							p.name, k+1)
					}
					break
				}
			}
		}
		if resps > 0 {
			switch {
			case (i == 0 && sc.atStart) || (i > 0 && cs[i-1].ncalls == 0):
				v.add(RuleGeminiResponseTurnPosition, o+i,
					"Please ensure that function response turn comes immediately after a function call turn.")
			case i > 0 && !geminiResponsesMatch(cs[i-1], c):
				v.add(RuleGeminiResponseCount, o+i,
					"Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.")
			}
		}
	}
}

// geminiResponsesMatch compares a call turn with its response turn: equal
// counts, and when both sides carry ids, the same multiset of ids.
func geminiResponsesMatch(call, resp *facts) bool {
	if call.ncalls != resp.nresults {
		return false
	}
	ids := map[string]int{}
	noID := false
	call.eachCall(func(_ int, p *fpart) {
		if p.id == "" {
			noID = true
		}
		ids[p.id]++
	})
	if noID {
		return true
	}
	for _, p := range resp.parts {
		if p.kind != PartResult {
			continue
		}
		if p.id == "" {
			return true
		}
		ids[p.id]--
	}
	for _, n := range ids {
		if n != 0 {
			return false
		}
	}
	return true
}

// geminiToolFields checks that the function calling config allows only
// functions declared.
func geminiToolFields(b *Body, ts *toolState, v *violations) {
	cfg := b.field("toolConfig")
	if isNull(cfg) {
		cfg = b.field("tool_config")
	}
	fcc := firstPath(cfg, []string{"functionCallingConfig"}, []string{"function_calling_config"})
	allowed, _ := asArray(firstPath(fcc, []string{"allowedFunctionNames"}, []string{"allowed_function_names"}))
	var names []string
	for _, a := range allowed {
		names = append(names, str(a))
	}
	for _, n := range unknownTools(ts.declared, names...) {
		v.add(RuleGeminiUnknownAllowedFunction, 0, "allowed_function_names: function '%s' is not declared in tools[].function_declarations.", n)
	}
}

// wholeGemini reports an edit that changes whether some call carries a
// thought signature, or which user message is the last.
func wholeGemini(_ *Body, gb, ga globals, _ *toolState) bool {
	return (gb.signed > 0) != (ga.signed > 0) || gb.lastUser != ga.lastUser
}
