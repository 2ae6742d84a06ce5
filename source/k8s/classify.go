package k8s

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/ginformer/ginformer/informer"
)

// classify maps an error of the Kubernetes API onto the source contract's
// sentinels, keeping the original error in the chain (errors.As still finds
// the *apierrors.StatusError):
//
//   - 410 Gone, reason Expired or Gone: [informer.ErrExpired];
//   - cause ResourceVersionTooLarge ("Too large resource version"):
//     [informer.ErrVersionTooLarge];
//   - 429, 503, 504 server timeouts, connection refused or reset, an
//     unexpected EOF: [informer.ErrTransient];
//   - 500: [informer.ErrInternal];
//   - 400 Bad Request and 422 Invalid (a malformed resourceVersion or
//     continue token, as the contract requires): [informer.ErrInvalidOptions];
//   - anything else (403, 404, ...): returned as is, so the reflector
//     logs it, backs off and relists.
//
// Context errors are returned unchanged.
func classify(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", op, err)
	}
	var sentinel error
	switch {
	case apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge):
		sentinel = informer.ErrVersionTooLarge
	case apierrors.IsResourceExpired(err), apierrors.IsGone(err):
		sentinel = informer.ErrExpired
	case apierrors.IsTooManyRequests(err), apierrors.IsServiceUnavailable(err),
		apierrors.IsServerTimeout(err), apierrors.IsTimeout(err),
		utilnet.IsConnectionRefused(err), utilnet.IsConnectionReset(err),
		utilnet.IsProbableEOF(err):
		sentinel = informer.ErrTransient
	case apierrors.IsInternalError(err), statusCode(err) == http.StatusInternalServerError:
		sentinel = informer.ErrInternal
	case apierrors.IsBadRequest(err), apierrors.IsInvalid(err):
		sentinel = informer.ErrInvalidOptions
	default:
		return fmt.Errorf("%s: %w", op, err)
	}
	return fmt.Errorf("%s: %w: %w", op, sentinel, err)
}

// statusCode returns the HTTP code of an API status error, 0 for others.
func statusCode(err error) int32 {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		return st.Status().Code
	}
	return 0
}

// isStreamingRefusal reports whether err is a server's refusal of a
// streaming list (sendInitialEvents): a 400 or 422 naming the field, as
// returned by servers with the WatchList feature off.
func isStreamingRefusal(err error) bool {
	if !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err) {
		return false
	}
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return false
	}
	s := st.Status()
	if s.Details != nil {
		for _, c := range s.Details.Causes {
			if c.Field == "sendInitialEvents" || c.Field == "resourceVersionMatch" || c.Field == "allowWatchBookmarks" {
				return true
			}
		}
	}
	return false
}
