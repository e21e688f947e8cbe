package spill

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pruneguard/pruneguard"
)

// RecallToolName is the name of the tool [RecallTool] describes.
const RecallToolName = "recall"

const recallSchema = `{"type":"object",` +
	`"description":"Read back messages that were moved out of the conversation to save context. Give the key named in the placeholder that replaced them. Answers a JSON array of the messages, with their ids, roles, content, calls and the calls they answer.",` +
	`"properties":{"key":{"type":"string","description":"The key from the placeholder, for example seg-0f6e1c2a-9b1d-4c55-8e42-6b0f0f2b7a10."}},` +
	`"required":["key"],"additionalProperties":false}`

// RecallTool describes the tool a runtime exposes to the model so it can
// read spilled content back: named [RecallToolName], taking {"key": K}
// with K the key of a pointer, and read-only and closed-world, so that
// what it answers is reconstructible content that may itself be pruned
// (calling it again gives the same bytes). Its schema carries the
// description the model reads. Answer its calls with
// [Spiller.HandleRecall].
func RecallTool() pruneguard.Tool {
	return pruneguard.Tool{
		Name:   RecallToolName,
		Schema: json.RawMessage(recallSchema),
		Annotations: pruneguard.Annotations{
			ReadOnlyHint:    pruneguard.Bool(true),
			DestructiveHint: pruneguard.Bool(false),
			IdempotentHint:  pruneguard.Bool(true),
			OpenWorldHint:   pruneguard.Bool(false),
		},
	}
}

// HandleRecall answers a call of the [RecallTool]: args is the call's JSON
// arguments, {"key": K}. K may also be written "store:key" as
// [PointerText] shows it. The answer is a JSON array of the segment's
// messages in the order they were spilled, each an object with "id",
// "role", "content" (or "content_base64" for content that is not UTF-8),
// "calls", "answers" and so on. An unknown or forgotten key fails with an
// error matching [ErrNotFound], a damaged segment with [ErrCorrupt], and
// arguments without a key with [ErrBadRecall]; the runtime should hand the
// error's text to the model as the tool's error result. The store is read
// with ctx.
func (s *Spiller) HandleRecall(ctx context.Context, args json.RawMessage) (string, error) {
	if !s.ready() {
		return "", ErrNoStore
	}
	var a struct {
		Key *string `json:"key"`
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return "", fmt.Errorf("%w: %v", ErrBadRecall, strings.TrimPrefix(err.Error(), "json: "))
	}
	if a.Key == nil {
		return "", fmt.Errorf("%w: no \"key\"", ErrBadRecall)
	}
	key := strings.TrimPrefix(strings.TrimSpace(*a.Key), s.name()+":")
	seg, err := s.read(ctx, "recall", pruneguard.Pointer{Store: s.name(), Key: key})
	if err != nil {
		return "", err
	}
	return string(seg.body), nil
}
