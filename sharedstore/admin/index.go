package admin

import (
	"context"
	"net/http"
	"strings"
)

// routeDocs says what each route does, for GET /v1/admin/: the URL the
// fleet's banner prints answers with the API it stands for, so an operator
// who opens it has the list rather than a 404. A test holds every route
// New adds to an entry here.
var routeDocs = map[string]string{
	"PUT /v1/admin/teams/{team}/spend-limits/{scope}/{id}/{period}":    `sets or changes a spend limit {"limit_usd":"200.00"}: scope team (id the team, period month), api_key (the key's id or hash) or user; period day or month (UTC)`,
	"DELETE /v1/admin/teams/{team}/spend-limits/{scope}/{id}/{period}": "removes a spend limit (404 when there is none)",
	"GET /v1/admin/teams/{team}/spend-limits":                          "the team's spend limits",
	"GET /v1/admin/teams/{team}/spend":                                 "the team's spend per scope and id: limit, confirmed, pending and cached USD (?period=YYYYMM or YYYYMMDD; default the current month)",
	"PUT /v1/admin/prices":                                             `adds a price list {"effective_from":"RFC 3339","pricing":{...}} for calls started from effective_from on (409 for an instant that has one)`,
	"GET /v1/admin/prices":                                             "every price list, the one in effect marked",
	"PUT /v1/admin/teams/{team}/balance":                               `sets the team's balance {"balance_usd":"100.00"}`,
	"GET /v1/admin/teams/{team}/balance":                               "the team's balance in the ledger and in the cache",
	"POST /v1/admin/teams/{team}/balance/top-up":                       `adds to the team's balance once per id {"amount_usd":"25.00","id":"invoice-42"}`,
	"GET /v1/admin/{$}":                                                "this list",
}

type routeDoc struct {
	Method string `json:"method"`
	Path   string `json:"path"`
	What   string `json:"what"`
}

type indexBody struct {
	Routes []routeDoc `json:"routes"`
	Auth   string     `json:"auth"`
}

// index lists the admin routes.
func (s *Server) index(context.Context, *http.Request, []byte) (int, any) {
	out := indexBody{Auth: "Authorization: Bearer <the token of --admin-token-file>"}
	for _, p := range s.patterns {
		method, path, _ := strings.Cut(p, " ")
		out.Routes = append(out.Routes, routeDoc{Method: method, Path: strings.TrimSuffix(path, "{$}"), What: routeDocs[p]})
	}
	return http.StatusOK, out
}
