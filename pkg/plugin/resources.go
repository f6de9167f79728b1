package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/resource"

	"github.com/flamehouse/flamehouse/pkg/query"
	"github.com/flamehouse/flamehouse/pkg/query/selector"
)

var _ backend.CallResourceHandler = (*Datasource)(nil)

// defaultResourceRange is the range of resource lookups without from/to.
const defaultResourceRange = 24 * time.Hour

// CallResource serves the query editor's lookups: profileTypes, services,
// labelNames and labelValues (?label=name), bounded by from and to (Unix
// milliseconds; default the last 24 hours) and, except for profileTypes,
// by profileTypeId; and pprof, a query's answer as a pprof file
// (servePprof).
func (d *Datasource) CallResource(ctx context.Context, req *backend.CallResourceRequest, sender backend.CallResourceResponseSender) error {
	if req.Method != http.MethodGet {
		return sendError(sender, http.StatusMethodNotAllowed, "use GET")
	}
	u, err := url.Parse(req.URL)
	if err != nil {
		return sendError(sender, http.StatusBadRequest, "invalid URL: "+err.Error())
	}
	params := u.Query()
	if strings.Trim(req.Path, "/") == pprofResource {
		return d.servePprof(ctx, req, params, sender)
	}
	scope, err := resourceScope(params, time.Now())
	if err != nil {
		return sendError(sender, http.StatusBadRequest, err.Error())
	}
	engine, err := d.engine(ctx)
	if err != nil {
		return sendError(sender, http.StatusBadRequest, "datasource settings: "+err.Error())
	}
	ctx = d.queryContext(ctx, req.PluginContext.User, "", "", "")
	var result any
	switch strings.Trim(req.Path, "/") {
	case "profileTypes":
		result, err = engine.ProfileTypes(ctx, scope)
	case "services":
		result, err = engine.Services(ctx, scope)
	case "labelNames":
		result, err = engine.LabelNames(ctx, scope)
	case "labelValues":
		result, err = engine.LabelValues(ctx, scope, params.Get("label"))
	default:
		return sendError(sender, http.StatusNotFound, fmt.Sprintf("unknown resource %q: use profileTypes, services, labelNames, labelValues or pprof", req.Path))
	}
	if err != nil {
		return sendError(sender, http.StatusBadGateway, err.Error())
	}
	return resource.SendJSON(sender, result)
}

// resourceScope reads from, to, profileTypeId and labelSelector (which
// narrows the answer to the series it selects).
func resourceScope(params url.Values, now time.Time) (query.Scope, error) {
	s := query.Scope{From: now.Add(-defaultResourceRange), To: now, ProfileType: params.Get("profileTypeId")}
	for name, dst := range map[string]*time.Time{"from": &s.From, "to": &s.To} {
		v := params.Get(name)
		if v == "" {
			continue
		}
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return s, fmt.Errorf("%s=%q is not a time in Unix milliseconds", name, v)
		}
		*dst = time.UnixMilli(ms)
	}
	if !s.To.After(s.From) {
		return s, errors.New("empty time range: to is not after from")
	}
	if s.ProfileType != "" {
		if _, err := query.ParseProfileType(s.ProfileType); err != nil {
			return s, err
		}
	}
	if sel := params.Get("labelSelector"); sel != "" {
		ms, err := selector.Parse(sel)
		if err != nil {
			return s, fmt.Errorf("labelSelector: %w", err)
		}
		s.Matchers = ms
	}
	return s, nil
}

func sendError(sender backend.CallResourceResponseSender, status int, msg string) error {
	body, err := json.Marshal(map[string]string{"message": msg})
	if err != nil {
		return err
	}
	return sender.Send(&backend.CallResourceResponse{
		Status:  status,
		Headers: map[string][]string{"Content-Type": {"application/json"}},
		Body:    body,
	})
}
