package openai

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/internal/httpmeta"
)

// mapError turns whatever go-openai or the HTTP stack returned into an
// *llm.Error, except a cancellation by the caller, which is not the
// provider's failure and stays an error that matches context.Canceled.
func (m *Model) mapError(ctx context.Context, err error, meta *httpmeta.Meta) error {
	var (
		apiErr *goopenai.APIError
		reqErr *goopenai.RequestError
		netErr net.Error
	)
	out := &llm.Error{Provider: m.provider, Err: err}
	switch {
	case errors.As(err, &reqErr):
		// Checked first: a body whose "error" is not an object (Ollama
		// sends {"error":"server busy"}) leaves an empty APIError inside
		// the RequestError that carries the status.
		out.Status = reqErr.HTTPStatusCode
		out.Kind = llm.KindForStatus(reqErr.HTTPStatusCode)
		out.Message = strings.TrimSpace(truncate(string(reqErr.Body), 500))
		if out.Message == "" {
			out.Message = reqErr.HTTPStatus
		}
		if isContextLength(nil, out.Message) {
			out.Kind = llm.KindContextLength
		}
	case errors.As(err, &apiErr):
		out.Status = apiErr.HTTPStatusCode
		out.Kind = llm.KindForStatus(apiErr.HTTPStatusCode)
		out.Message = apiErr.Message
		if code := fmt.Sprint(apiErr.Code); code != "<nil>" && code != "" {
			out.Message += " [" + code + "]"
		}
		if isContextLength(apiErr.Code, apiErr.Message) {
			out.Kind = llm.KindContextLength
		} else if out.Kind == llm.KindUnknown {
			// An error sent inside a stream has no HTTP status.
			out.Kind = kindForErrorType(apiErr.Type)
		}
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return fmt.Errorf("%s: request canceled: %w", m.provider, err)
	case errors.As(err, &netErr) && netErr.Timeout() && ctx.Err() == nil:
		return httpmeta.TimeoutError(m.provider, m.timeouts, err)
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		out.Kind = llm.KindTimeout
		out.Message = "no complete reply before the deadline"
	case errors.Is(err, goopenai.ErrReasoningModelMaxTokensDeprecated),
		errors.Is(err, goopenai.ErrReasoningModelLimitationsOther),
		errors.Is(err, goopenai.ErrReasoningModelLimitationsLogprobs),
		errors.Is(err, goopenai.ErrReasoningToolsRequireResponses),
		errors.Is(err, goopenai.ErrReasoningSamplingUnsupported),
		errors.Is(err, goopenai.ErrReasoningEffortUnsupported),
		errors.Is(err, goopenai.ErrChatCompletionInvalidModel):
		// go-openai refused the request before sending it.
		out.Kind = llm.KindBadRequest
		out.Message = err.Error()
	default:
		// Connection refused, DNS failure, a broken stream: the server may
		// well answer a second try.
		out.Kind = llm.KindServer
		out.Message = err.Error()
	}
	if out.Kind == llm.KindRateLimit || out.Kind == llm.KindServer {
		out.RetryAfter = meta.RetryAfter
	}
	httpmeta.ScrubKey(out, m.apiKey)
	return out
}

func isContextLength(code any, message string) bool {
	if c, ok := code.(string); ok && c == "context_length_exceeded" {
		return true
	}
	return httpmeta.MentionsContextLength(message)
}

func kindForErrorType(typ string) llm.ErrorKind {
	switch typ {
	case "rate_limit_exceeded", "rate_limit_error", "tokens":
		return llm.KindRateLimit
	case "server_error", "overloaded_error":
		return llm.KindServer
	case "invalid_request_error":
		return llm.KindBadRequest
	case "authentication_error", "permission_error":
		return llm.KindAuth
	}
	return llm.KindUnknown
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
