package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/flamehouse/flamehouse/pkg/query"
)

// pprofResource is the resource that downloads a query's answer as pprof.
const pprofResource = "pprof"

// servePprof answers GET pprof?query=<JSON>&from=<ms>&to=<ms>: the query
// (a flame graph or table query, as the editor stores it, variables
// replaced) over the range, as a gzipped pprof profile built by the
// engine (query.Engine.Pprof), served as an attachment.
func (d *Datasource) servePprof(ctx context.Context, req *backend.CallResourceRequest, params url.Values, sender backend.CallResourceResponseSender) error {
	r, err := pprofRequest(params, d.settings.queryOptions())
	if err != nil {
		return sendError(sender, http.StatusBadRequest, "invalid query: "+err.Error())
	}
	engine, err := d.engine(ctx)
	if err != nil {
		return sendError(sender, http.StatusBadRequest, "datasource settings: "+err.Error())
	}
	ctx = d.queryContext(ctx, req.PluginContext.User, "", "", "")
	prof, err := engine.Pprof(ctx, r)
	if errors.Is(err, query.ErrInvalidQuery) || errors.Is(err, query.ErrNoTracesTable) {
		return sendError(sender, http.StatusBadRequest, err.Error())
	}
	if err != nil {
		return sendError(sender, http.StatusBadGateway, "ClickHouse: "+err.Error())
	}
	var body bytes.Buffer
	if err := prof.Write(&body); err != nil {
		return sendError(sender, http.StatusInternalServerError, "encode the profile: "+err.Error())
	}
	return sender.Send(&backend.CallResourceResponse{
		Status: http.StatusOK,
		Headers: map[string][]string{
			"Content-Type":        {"application/octet-stream"},
			"Content-Disposition": {`attachment; filename="` + query.PprofFileName(r) + `"`},
		},
		Body: body.Bytes(),
	})
}

// pprofRequest reads a pprof download's query and range.
func pprofRequest(params url.Values, opts query.Options) (*query.Request, error) {
	raw := params.Get("query")
	if raw == "" {
		return nil, errors.New("the query parameter is missing: pass the query's JSON")
	}
	var errs []error
	times := map[string]time.Time{}
	for _, name := range []string{"from", "to"} {
		v := params.Get(name)
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q is not a time in Unix milliseconds", name, v))
			continue
		}
		times[name] = time.UnixMilli(ms)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return query.ParseRequest([]byte(raw), times["from"], times["to"], 0, opts)
}
