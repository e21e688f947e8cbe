package einoguard

import (
	"context"

	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
)

type sessionKey struct{}

// WithSession returns a copy of ctx that carries s. The hooks of any
// session use the session ctx carries in place of their own, so one eino
// agent, built once with one session's hook, can serve many conversations:
// run each with its own session in the context it is run with.
func WithSession(ctx context.Context, s *Session) context.Context {
	return context.WithValue(ctx, sessionKey{}, s)
}

// FromContext returns the session ctx carries, if any.
func FromContext(ctx context.Context) (*Session, bool) {
	s, ok := ctx.Value(sessionKey{}).(*Session)
	return s, ok && s != nil
}

// pick returns the session of ctx, or s.
func (s *Session) pick(ctx context.Context) *Session {
	if x, ok := FromContext(ctx); ok {
		return x
	}
	return s
}

// Modifier returns the session as a message modifier: the function type
// of eino's react.AgentConfig MessageModifier and MessageRewriter. It
// returns the pruned list. A modifier has no error result: on an error it
// returns what [Session.Prune] returns (the input as given for a list it
// cannot take in, the furthest safe prune past the ceiling, no message
// at all when Config.Sessions fails and Config.FailOpen is not set), and the error reaches
// Config.OnReport. With Config.Sessions, prefer [Session.Middleware] or
// [PreHandler], which fail the call with the error.
//
// As a MessageModifier (the pruned list goes to the model, the agent's
// state keeps the full history) the session takes in only the messages
// appended since the last call. As a MessageRewriter (the pruned list
// replaces the state) it recognises its own previous answer as the prefix.
func (s *Session) Modifier() func(context.Context, []*schema.Message) []*schema.Message {
	return func(ctx context.Context, msgs []*schema.Message) []*schema.Message {
		out, _, _ := s.pick(ctx).Prune(ctx, msgs)
		return out
	}
}

// Middleware returns the session as an adk agent middleware: its
// BeforeChatModel replaces the state's messages with the pruned list
// before each model call of a ChatModelAgent, and fails the call with the
// guard's error (a *pruneguard.CeilingError, or a list it cannot take in
// matching pruneguard.ErrInvalidInput) rather than send it.
func (s *Session) Middleware() adk.AgentMiddleware {
	return adk.AgentMiddleware{
		BeforeChatModel: func(ctx context.Context, st *adk.ChatModelAgentState) error {
			out, _, err := s.pick(ctx).Prune(ctx, st.Messages)
			if err != nil {
				return err
			}
			st.Messages = out
			return nil
		},
	}
}

// PreHandler returns s as a state pre-handler for a chat model node of a
// compose graph whose input is the message list (compose.WithStatePreHandler):
// it passes the pruned list on, and fails the node with the guard's
// error. The state is not touched.
func PreHandler[S any](s *Session) compose.StatePreHandler[[]*schema.Message, S] {
	return func(ctx context.Context, in []*schema.Message, _ S) ([]*schema.Message, error) {
		out, _, err := s.pick(ctx).Prune(ctx, in)
		if err != nil {
			return nil, err
		}
		return out, nil
	}
}
