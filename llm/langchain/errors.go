package langchain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"

	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/internal/httpmeta"
)

// statusInText finds the HTTP status langchaingo providers write into their
// error text ("API returned unexpected status code: 429: ...").
var statusInText = regexp.MustCompile(`status(?: code)?:? (\d{3})\b`)

// mapError turns a langchaingo error into an *llm.Error. The HTTP status
// decides when it is known (from the doer, or from the error text); words in
// the text decide otherwise. A cancellation by the caller is not the
// provider's failure and stays an error matching context.Canceled.
func (m *Model) mapError(ctx context.Context, err error, meta *httpmeta.Meta) error {
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return fmt.Errorf("%s: request canceled: %w", m.provider, err)
	}
	// langchaingo starts its messages with the provider's name, which
	// llm.Error already prints.
	msg := strings.TrimPrefix(err.Error(), m.provider+": ")
	out := &llm.Error{Provider: m.provider, Err: err, Message: msg, Status: meta.Status}
	if out.Status == 0 {
		if sm := statusInText.FindStringSubmatch(err.Error()); sm != nil {
			out.Status, _ = strconv.Atoi(sm[1])
		}
	}
	var (
		lcErr  *llms.Error
		netErr net.Error
		urlErr *url.Error
	)
	switch {
	case errors.As(err, &netErr) && netErr.Timeout() && ctx.Err() == nil:
		t := httpmeta.TimeoutError(m.provider, m.timeouts, err)
		out.Kind, out.Message = t.Kind, t.Message
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		out.Kind = llm.KindTimeout
	case errors.Is(err, anthropic.ErrEmptyResponse):
		out.Kind = llm.KindEmptyReply
	case out.Status != 0:
		out.Kind = llm.KindForStatus(out.Status)
	case errors.Is(err, io.ErrUnexpectedEOF), strings.Contains(err.Error(), "unexpected EOF"), strings.Contains(err.Error(), "connection reset"):
		// The body was cut in transit (langchaingo does not always wrap
		// the cause): a second try may well get it whole.
		out.Kind = llm.KindServer
	case errors.As(err, &lcErr):
		out.Kind = kindForCode(lcErr.Code)
	default:
		out.Kind = kindForText(err.Error())
		if out.Kind == llm.KindUnknown && errors.As(err, &urlErr) {
			// The request never got an answer: refused, reset, DNS.
			out.Kind = llm.KindServer
		}
	}
	// A context-length failure comes as a plain 400 ("prompt is too long").
	if (out.Kind == llm.KindBadRequest || out.Kind == llm.KindUnknown) && httpmeta.MentionsContextLength(err.Error()) {
		out.Kind = llm.KindContextLength
	}
	if out.Kind == llm.KindRateLimit || out.Kind == llm.KindServer {
		out.RetryAfter = meta.RetryAfter
	}
	httpmeta.ScrubKey(out, m.apiKey)
	return out
}

func kindForCode(code llms.ErrorCode) llm.ErrorKind {
	switch code {
	case llms.ErrCodeAuthentication:
		return llm.KindAuth
	case llms.ErrCodeRateLimit, llms.ErrCodeQuotaExceeded:
		return llm.KindRateLimit
	case llms.ErrCodeTokenLimit:
		return llm.KindContextLength
	case llms.ErrCodeTimeout:
		return llm.KindTimeout
	case llms.ErrCodeProviderUnavailable:
		return llm.KindServer
	case llms.ErrCodeInvalidRequest, llms.ErrCodeResourceNotFound, llms.ErrCodeContentFilter:
		return llm.KindBadRequest
	}
	return llm.KindUnknown
}

// kindForText guesses the kind from words providers use, for errors that
// carry no status, such as an error event in the middle of a stream.
func kindForText(s string) llm.ErrorKind {
	s = strings.ToLower(s)
	has := func(words ...string) bool {
		for _, w := range words {
			if strings.Contains(s, w) {
				return true
			}
		}
		return false
	}
	switch {
	case httpmeta.MentionsContextLength(s):
		return llm.KindContextLength
	case has("rate limit", "rate_limit", "too many requests", "resource_exhausted", "quota"):
		return llm.KindRateLimit
	case has("authentication", "unauthorized", "invalid api key", "invalid x-api-key", "permission", "forbidden"):
		return llm.KindAuth
	case has("overloaded", "internal server error", "api_error", "service unavailable", "bad gateway"):
		return llm.KindServer
	case has("invalid_request", "invalid request", "bad request"):
		return llm.KindBadRequest
	}
	return llm.KindUnknown
}

func sniffImage(data []byte) string { return http.DetectContentType(data) }
