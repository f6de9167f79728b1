package plugin

import (
	"context"
	"errors"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/flamehouse/flamehouse/pkg/query"
)

// QueryData answers each query: a flame graph, a top-functions table,
// time series, a trace's spans or the costliest spans. Invalid queries and
// ClickHouse failures are downstream errors of that query only; the
// frames' links name the datasource by the uid in the plugin context.
func (d *Datasource) QueryData(ctx context.Context, req *backend.QueryDataRequest) (*backend.QueryDataResponse, error) {
	resp := backend.NewQueryDataResponse()
	engine, err := d.engine(ctx)
	if err != nil {
		for _, q := range req.Queries {
			resp.Responses[q.RefID] = backend.ErrDataResponseWithSource(backend.StatusBadRequest, backend.ErrorSourceDownstream,
				"datasource settings: "+err.Error())
		}
		return resp, nil
	}
	if ds := req.PluginContext.DataSourceInstanceSettings; ds != nil {
		engine.DatasourceUID, engine.DatasourceName = ds.UID, ds.Name
	}
	alert := fromAlert(req.Headers)
	ctx = d.queryContext(ctx, req.PluginContext.User, req.GetHTTPHeader("X-Dashboard-Uid"), req.GetHTTPHeader("X-Panel-Id"), header(req.Headers, "X-Rule-Uid"))
	for _, q := range req.Queries {
		resp.Responses[q.RefID] = d.query(ctx, engine, q, alert)
	}
	return resp, nil
}

// header is a plain (not http_) request header, whatever its case.
func header(headers map[string]string, name string) string {
	for k, v := range headers {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// fromAlert reports whether a request comes from Grafana's alert
// evaluation, which marks it with the FromAlert header (whose name may
// arrive canonicalised, "Fromalert").
func fromAlert(headers map[string]string) bool {
	return header(headers, backend.FromAlertHeaderName) == "true"
}

func (d *Datasource) query(ctx context.Context, engine *query.Engine, q backend.DataQuery, alert bool) backend.DataResponse {
	opts := d.settings.queryOptions()
	opts.Alert = alert
	r, err := query.ParseRequest(q.JSON, q.TimeRange.From, q.TimeRange.To, q.Interval, opts)
	if err != nil {
		return backend.ErrDataResponseWithSource(backend.StatusBadRequest, backend.ErrorSourceDownstream, "invalid query: "+err.Error())
	}
	frames, err := engine.Run(ctx, r)
	if errors.Is(err, query.ErrNoTracesTable) || errors.Is(err, query.ErrNotForAlerts) || errors.Is(err, query.ErrInvalidQuery) {
		return backend.ErrDataResponseWithSource(backend.StatusBadRequest, backend.ErrorSourceDownstream, err.Error())
	}
	if err != nil {
		return clickHouseError(err)
	}
	for _, f := range frames {
		f.RefID = q.RefID
	}
	return backend.DataResponse{Frames: frames}
}

// clickHouseError states a failed ClickHouse query as a downstream error.
func clickHouseError(err error) backend.DataResponse {
	status := backend.StatusInternal
	var ex *clickhouse.Exception
	if errors.As(err, &ex) {
		status = backend.StatusBadGateway
	}
	if errors.Is(err, context.DeadlineExceeded) {
		status = backend.StatusTimeout
	}
	return backend.ErrDataResponseWithSource(status, backend.ErrorSourceDownstream, "ClickHouse: "+err.Error())
}

// engine is the query engine on the datasource's connection, reading the
// tenant of the ClickHouse user when it is a tenant user.
func (d *Datasource) engine(ctx context.Context) (*query.Engine, error) {
	conn, err := d.connection()
	if err != nil {
		return nil, err
	}
	tenant, _, err := d.tenant(ctx, conn)
	if err != nil {
		return nil, err
	}
	return &query.Engine{
		Conn: conn, Tables: d.settings.schemaConfig(), Tenant: tenant, Symbols: d.symbols,
		Schema: d.settings.Profiles.Schema, OTelTable: d.settings.Profiles.OTelTable,
		TracesDatabase: d.settings.Profiles.TracesDatabase, TracesTable: d.settings.Profiles.TracesTable,
		Cache: d.cache, Resolver: d.resolver,
	}, nil
}

// queryContext carries the ClickHouse settings of the datasource's
// queries: a time limit, a result limit, and a log_comment naming the
// Grafana user, dashboard and panel (visible in system.query_log).
func (d *Datasource) queryContext(ctx context.Context, user *backend.User, dashboard, panel, rule string) context.Context {
	var who []string
	if user != nil && user.Login != "" {
		who = append(who, "grafana_user:"+user.Login)
	}
	if rule != "" {
		who = append(who, "grafana_rule:"+rule)
	}
	if dashboard != "" {
		who = append(who, "grafana_dashboard:"+dashboard)
	}
	if panel != "" {
		who = append(who, "grafana_panel:"+panel)
	}
	settings := clickhouse.Settings{"max_result_rows": maxResultRows, "result_overflow_mode": "throw"}
	if t := d.settings.queryTimeout(); t > 0 {
		settings["max_execution_time"] = int(t.Seconds())
	}
	if len(who) > 0 {
		settings["log_comment"] = "flamehouse " + strings.Join(who, " ")
	}
	return query.WithSettings(ctx, settings)
}

// maxResultRows protects the plugin from runaway results (stacks of a
// flame graph, frames of a lookup, points of time series).
const maxResultRows = 5_000_000
