import AttributionModel

/// The OpenAPI 3.1 document of ingest's whole HTTP API, served at `/openapi.json`. Tests hold it to the
/// routes ingest really registers (`ingest --routes`) and to every `ProblemReason`.
enum OpenAPIDocument {
    /// The reasons of one channel as a JSON array, for the `enum` of a `reason` property.
    static func reasons(in channel: ProblemReason.Channel) -> String {
        "[" + ProblemReason.appearing(in: channel).map { "\"\($0.rawValue)\"" }.joined(separator: ", ") + "]"
    }

    /// A batch route's path item (`…/batch`), the same for every kind of event but its schema.
    static func batchRoute(_ path: String, _ schema: String, _ what: String, appKey: Bool) -> String {
        let security = appKey ? #""security": [{"appKey": []}],"# : ""
        // Only the app routes can be refused for their key as a whole.
        let unauthorized = appKey ? "\n" + ##"                  "401": {"$ref": "#/components/responses/Problem"},"## : ""
        return #"""
            "\#(path)/batch": {
              "post": {
                \#(security)
                "summary": "Report up to 1,000 \#(what) in one request; each item is answered on its own",
                "parameters": [{"name": "Idempotency-Key", "in": "header", "required": false, "schema": {"type": "string", "minLength": 1, "maxLength": 240}, "description": "gives item i (from 0) the key `<header>:<i>` unless it carries its own `idempotency-key`; an empty or longer header refuses the whole batch (400 `invalid-idempotency-key`)"}],
                "requestBody": {"required": true, "description": "a JSON array of the single route's objects, or NDJSON (one per line); each may carry `idempotency-key`. At most `MAX_BATCH_BODY_BYTES` (4 MiB by default)", "content": {"application/json": {"schema": {"type": "array", "minItems": 1, "maxItems": 1000, "items": {"allOf": [{"$ref": "#/components/schemas/\#(schema)"}, {"$ref": "#/components/schemas/BatchItemKey"}]}}}, "application/x-ndjson": {"schema": {"type": "string", "description": "one JSON object per line, as in the array"}}}},
                "responses": {
                  "200": {"description": "one result per item, in order: `status` 202 with its `event-identifier`, or the item's problem (400 invalid item, 401/403 app key, 413 `body-too-large` for an item larger than `MAX_BODY_BYTES`, 422 `idempotency-key-reused`, 429 `rate-limited`, 503 `replication-timeout`, which names the written `event-identifier`, or `redis-unreachable`). When an item was answered 429 or 503, the response carries the longest `Retry-After` they ask for", "headers": {"Retry-After": {"schema": {"type": "integer"}}}, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/BatchAnswer"}}}},
                  "400": {"$ref": "#/components/responses/Problem"},\#(unauthorized)
                  "413": {"$ref": "#/components/responses/Problem"},
                  "503": {"description": "not acknowledged; retry after `Retry-After` seconds with the same `Idempotency-Key`. `overloaded` (ingest at capacity: `INGEST_MAX_IN_FLIGHT`, `INGEST_QUEUE_TARGET_MS`) and `pipeline-lagging` (the verifier past `INGEST_MAX_EVENTS_LAG` behind) are answered at once and wrote nothing; `redis-unreachable` (Redis unavailable) and `replication-timeout` (written, not yet on a replica) may have written it", "headers": {"Retry-After": {"schema": {"type": "integer"}}}, "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}}
                }
              }
            }
            """#
    }

    /// The document, each admin-listener path item naming that listener as its server.
    static let json = onAdminListener(document)

    /// The public listener, and the admin listener for the admin API and `/metrics`.
    static let publicServer =
        #"{"url": "http://{host}:{port}", "description": "the public listener", "variables": {"host": {"default": "127.0.0.1", "description": "HTTP_HOST"}, "port": {"default": "8080", "description": "HTTP_PORT"}}}"#
    static let adminServer =
        #"{"url": "http://{host}:{port}", "description": "the admin listener: admin API, /metrics, and /ready with details", "variables": {"host": {"default": "127.0.0.1", "description": "ADMIN_HTTP_HOST"}, "port": {"default": "8081", "description": "ADMIN_HTTP_PORT"}}}"#

    /// Adds `servers` to the path items ingest serves on its admin listener only (`/v1/admin/…`,
    /// `/metrics`): the public port answers them 404.
    static func onAdminListener(_ document: String) -> String {
        document.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            let trimmed = line.drop { $0 == " " }
            guard line.hasSuffix("\": {"), trimmed.hasPrefix("\"/v1/admin/") || trimmed.hasPrefix("\"/metrics\"") else {
                return String(line)
            }
            let indent = String(repeating: " ", count: line.count - trimmed.count + 2)
            return line + "\n" + indent + "\"servers\": [\(adminServer)],"
        }.joined(separator: "\n")
    }

    static let document = #"""
        {
          "openapi": "3.1.0",
          "info": {
            "title": "attribution-pipeline ingest",
            "version": "1.0.0",
            "description": "Events in (impressions, conversions, conversion-value updates) and the pipeline's public keys on the public listener (`HTTP_PORT`); the admin API and `/metrics` on the admin listener (`ADMIN_HTTP_PORT`, each such path names it in `servers`), which the public port answers 404. `/health` and `/ready` are on both. Errors are RFC 9457 problem JSON with a stable `reason`. Any route that reads or writes Redis may answer 503 `redis-unreachable` with `Retry-After` while Redis is unavailable; a path served with other methods answers 405 `method-not-allowed` with `Allow`. Times are milliseconds since 1970."
          },
          "servers": [\#(publicServer)],
          "paths": {
            "/v1/impressions": {
              "post": {
                "summary": "Report an impression (compact JWS signed by the ad network) with its interaction",
                "parameters": [
                  {
                    "name": "Idempotency-Key",
                    "in": "header",
                    "required": false,
                    "schema": {
                      "type": "string",
                      "minLength": 1,
                      "maxLength": 255
                    },
                    "description": "a retry with the same key and body returns the first answer; with another body, 422. A key is remembered 24 h per route, device and caller (an impression's ad network as its signature's `kid` names it; otherwise the advertised app), so two callers never share one"
                  }
                ],
                "requestBody": {
                  "required": true,
                  "content": {
                    "application/json": {
                      "schema": {
                        "$ref": "#/components/schemas/ImpressionRequest"
                      }
                    }
                  }
                },
                "responses": {
                  "503": {"description": "not acknowledged; retry after `Retry-After` seconds with the same `Idempotency-Key`. `overloaded` (ingest at capacity: `INGEST_MAX_IN_FLIGHT`, `INGEST_QUEUE_TARGET_MS`) and `pipeline-lagging` (the verifier past `INGEST_MAX_EVENTS_LAG` behind) are answered at once and wrote nothing; `redis-unreachable` (Redis unavailable) and `replication-timeout` (written, not yet on a replica) may have written it", "headers": {"Retry-After": {"schema": {"type": "integer"}}}, "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}},
                  "429": {"description": "`rate-limited`: this caller (ad network or app) is past `INGEST_CALLER_RATE`; nothing was written, retry after `Retry-After` seconds", "headers": {"Retry-After": {"schema": {"type": "integer"}}}, "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}},
                  "202": {
                    "description": "accepted: the event is in the pipeline",
                    "content": {
                      "application/json": {
                        "schema": {
                          "$ref": "#/components/schemas/Accepted"
                        }
                      }
                    }
                  },
                  "400": {
                    "$ref": "#/components/responses/Problem"
                  },
                  "413": {
                    "$ref": "#/components/responses/Problem"
                  },
                  "422": {
                    "$ref": "#/components/responses/Problem"
                  }
                }
              }
            },
            "/v1/conversions": {
              "post": {
                "summary": "Report an install or re-engagement",
                "security": [
                  {
                    "appKey": []
                  }
                ],
                "parameters": [
                  {
                    "name": "Idempotency-Key",
                    "in": "header",
                    "required": false,
                    "schema": {
                      "type": "string",
                      "minLength": 1,
                      "maxLength": 255
                    },
                    "description": "a retry with the same key and body returns the first answer; with another body, 422. A key is remembered 24 h per route, device and caller (an impression's ad network as its signature's `kid` names it; otherwise the advertised app), so two callers never share one"
                  }
                ],
                "requestBody": {
                  "required": true,
                  "content": {
                    "application/json": {
                      "schema": {
                        "$ref": "#/components/schemas/ConversionRequest"
                      }
                    }
                  }
                },
                "responses": {
                  "503": {"description": "not acknowledged; retry after `Retry-After` seconds with the same `Idempotency-Key`. `overloaded` (ingest at capacity: `INGEST_MAX_IN_FLIGHT`, `INGEST_QUEUE_TARGET_MS`) and `pipeline-lagging` (the verifier past `INGEST_MAX_EVENTS_LAG` behind) are answered at once and wrote nothing; `redis-unreachable` (Redis unavailable) and `replication-timeout` (written, not yet on a replica) may have written it", "headers": {"Retry-After": {"schema": {"type": "integer"}}}, "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}},
                  "429": {"description": "`rate-limited`: this caller (ad network or app) is past `INGEST_CALLER_RATE`; nothing was written, retry after `Retry-After` seconds", "headers": {"Retry-After": {"schema": {"type": "integer"}}}, "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}},
                  "202": {
                    "description": "accepted",
                    "content": {
                      "application/json": {
                        "schema": {
                          "$ref": "#/components/schemas/Accepted"
                        }
                      }
                    }
                  },
                  "400": {
                    "$ref": "#/components/responses/Problem"
                  },
                  "401": {
                    "$ref": "#/components/responses/Problem"
                  },
                  "403": {
                    "$ref": "#/components/responses/Problem"
                  },
                  "413": {
                    "$ref": "#/components/responses/Problem"
                  },
                  "422": {
                    "$ref": "#/components/responses/Problem"
                  }
                }
              }
            },
            "/v1/conversion-value-updates": {
              "post": {
                "summary": "Report a conversion-value update (AdAttributionKit PostbackUpdate)",
                "description": "Goes to the conversion its `conversionTag` names, else the device's most recent one its `conversionTypes` allow. A `conversionTag` must be one a re-engagement's 202 returned (a lowercase UUID), else 400 `invalid-conversion-tag` (Apple's invalidConversionTag); with `conversionTypes` that leave out `reengagement` it is 400 `conversion-tag-not-supported` (Apple's conversionTagNotSupported: only re-engagement conversions have tags); a tag no attributed re-engagement of the app on the device has (unknown, or its re-engagement was refused) is refused `invalid-conversion-tag` once it has waited 2 scaled days. A conversion window (days 0–2, 3–7, 8–35 after the conversion) sends a postback only if an update (or activity the app's value schema turns into one) is reported in it, with that window's own values: nothing carries over from an earlier window. An update before its conversion waits for it at most 2 scaled days (at least 10 minutes of wall clock), then is refused `conversion-not-found`; at most 100 wait per device and app (past that: `pending-limit`). Both refusals appear in the app's refusal list, not in this answer.",
                "security": [
                  {
                    "appKey": []
                  }
                ],
                "parameters": [
                  {
                    "name": "Idempotency-Key",
                    "in": "header",
                    "required": false,
                    "schema": {
                      "type": "string",
                      "minLength": 1,
                      "maxLength": 255
                    },
                    "description": "a retry with the same key and body returns the first answer; with another body, 422. A key is remembered 24 h per route, device and caller (an impression's ad network as its signature's `kid` names it; otherwise the advertised app), so two callers never share one"
                  }
                ],
                "requestBody": {
                  "required": true,
                  "content": {
                    "application/json": {
                      "schema": {
                        "$ref": "#/components/schemas/ValueUpdateRequest"
                      }
                    }
                  }
                },
                "responses": {
                  "503": {"description": "not acknowledged; retry after `Retry-After` seconds with the same `Idempotency-Key`. `overloaded` (ingest at capacity: `INGEST_MAX_IN_FLIGHT`, `INGEST_QUEUE_TARGET_MS`) and `pipeline-lagging` (the verifier past `INGEST_MAX_EVENTS_LAG` behind) are answered at once and wrote nothing; `redis-unreachable` (Redis unavailable) and `replication-timeout` (written, not yet on a replica) may have written it", "headers": {"Retry-After": {"schema": {"type": "integer"}}}, "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}},
                  "429": {"description": "`rate-limited`: this caller (ad network or app) is past `INGEST_CALLER_RATE`; nothing was written, retry after `Retry-After` seconds", "headers": {"Retry-After": {"schema": {"type": "integer"}}}, "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}},
                  "202": {
                    "description": "accepted",
                    "content": {
                      "application/json": {
                        "schema": {
                          "$ref": "#/components/schemas/Accepted"
                        }
                      }
                    }
                  },
                  "400": {
                    "$ref": "#/components/responses/Problem"
                  },
                  "401": {
                    "$ref": "#/components/responses/Problem"
                  },
                  "403": {
                    "$ref": "#/components/responses/Problem"
                  },
                  "413": {
                    "$ref": "#/components/responses/Problem"
                  },
                  "422": {
                    "$ref": "#/components/responses/Problem"
                  }
                }
              }
            },
            "/v1/admin/ad-networks/{id}": {
              "parameters": [
                {
                  "name": "id",
                  "in": "path",
                  "required": true,
                  "schema": {
                    "type": "string",
                    "pattern": "^[a-z0-9._-]{1,255}$"
                  },
                  "description": "ad network id, lowercase"
                }
              ],
              "delete": {
                "summary": "Delete the ad network: its registration, read-only credentials and refusal lists. Its impressions not yet verified are then refused (`unknown-ad-network`, listed nowhere); verified impressions stay in devices' pools and can still win; its postbacks, when due (and retries of ones already tried), are dead-lettered with `ad network … is not registered` and delivered by a replay once it is registered again (to its postback URL then)",
                "security": [{"adminToken": []}],
                "responses": {
                  "200": {"description": "deleted", "content": {"application/json": {"schema": {"type": "object", "properties": {"ad-network-identifier": {"type": "string"}, "deleted": {"type": "boolean"}}}}}},
                  "400": {"$ref": "#/components/responses/Problem"},
                  "401": {"$ref": "#/components/responses/Problem"},
                  "404": {"description": "not registered (`unknown-ad-network`)", "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}}
                }
              },
              "put": {
                "summary": "Register an ad network or rotate its key (the previous key stays valid for a grace period)",
                "security": [
                  {
                    "adminToken": []
                  }
                ],
                "requestBody": {
                  "required": true,
                  "content": {
                    "application/json": {
                      "schema": {
                        "$ref": "#/components/schemas/AdNetworkRequest"
                      }
                    }
                  }
                },
                "responses": {
                  "200": {
                    "description": "the stored registration",
                    "content": {
                      "application/json": {
                        "schema": {
                          "$ref": "#/components/schemas/AdNetworkRegistration"
                        }
                      }
                    }
                  },
                  "400": {
                    "$ref": "#/components/responses/Problem"
                  },
                  "401": {
                    "$ref": "#/components/responses/Problem"
                  },
                  "413": {
                    "$ref": "#/components/responses/Problem"
                  }
                }
              },
              "get": {
                "summary": "Read an ad network's registration",
                "security": [
                  {
                    "adminToken": []
                  }
                ],
                "responses": {
                  "200": {
                    "description": "the registration",
                    "content": {
                      "application/json": {
                        "schema": {
                          "$ref": "#/components/schemas/AdNetworkRegistration"
                        }
                      }
                    }
                  },
                  "400": {
                    "$ref": "#/components/responses/Problem"
                  },
                  "401": {
                    "$ref": "#/components/responses/Problem"
                  },
                  "404": {
                    "$ref": "#/components/responses/Problem"
                  }
                }
              }
            },
            "/v1/admin/ad-networks/{id}/rejections": {
              "parameters": [
                {
                  "name": "id",
                  "in": "path",
                  "required": true,
                  "schema": {
                    "type": "string",
                    "pattern": "^[a-z0-9._-]{1,255}$"
                  },
                  "description": "ad network id, lowercase"
                }
              ],
              "get": {
                "summary": "Recent refusals of this network's impressions, newest first",
                "description": "`rejections` lists only impressions whose signature verified. Anyone can name a network on an impression, so refusals before its signature verified (parse, algorithm, key, signature) are listed apart in `unsigned-rejections` (also the last 100) and counted in `unsigned-refusals`: a flood of forged impressions never pushes the network's own refusals out of its list",
                "security": [
                  {
                    "adminToken": []
                  }
                ],
                "responses": {
                  "200": {
                    "description": "up to 100 refusals",
                    "content": {
                      "application/json": {
                        "schema": {
                          "$ref": "#/components/schemas/Rejections"
                        }
                      }
                    }
                  },
                  "400": {
                    "$ref": "#/components/responses/Problem"
                  },
                  "401": {
                    "$ref": "#/components/responses/Problem"
                  }
                }
              }
            },
            "/v1/admin/publisher-apps/{item}": {
              "parameters": [
                {
                  "name": "item",
                  "in": "path",
                  "required": true,
                  "schema": {
                    "type": "integer",
                    "minimum": 1
                  },
                  "description": "App Store item id"
                }
              ],
              "get": {
                "summary": "The publisher app as stored (its AdNetworkIdentifiers, each once)",
                "security": [{"adminToken": []}],
                "responses": {
                  "200": {"description": "the registration, as the PUT answered it", "content": {"application/json": {"schema": {"type": "object"}}}},
                  "400": {"$ref": "#/components/responses/Problem"},
                  "401": {"$ref": "#/components/responses/Problem"},
                  "404": {"description": "not registered (`unknown-publisher-app`)", "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}}
                }
              },
              "delete": {
                "summary": "Delete the publisher app. Impressions naming it not yet verified are then refused (`publisher-not-listing-network`: a deleted app lists no network); verified ones stay eligible",
                "security": [{"adminToken": []}],
                "responses": {
                  "200": {"description": "deleted", "content": {"application/json": {"schema": {"type": "object", "properties": {"item-identifier": {"type": "string"}, "deleted": {"type": "boolean"}}}}}},
                  "400": {"$ref": "#/components/responses/Problem"},
                  "401": {"$ref": "#/components/responses/Problem"},
                  "404": {"description": "not registered (`unknown-publisher-app`)", "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}}
                }
              },
              "put": {
                "summary": "Register a publisher app and its AdNetworkIdentifiers",
                "security": [
                  {
                    "adminToken": []
                  }
                ],
                "requestBody": {
                  "required": true,
                  "content": {
                    "application/json": {
                      "schema": {
                        "$ref": "#/components/schemas/PublisherAppRequest"
                      }
                    }
                  }
                },
                "responses": {
                  "200": {
                    "description": "stored"
                  },
                  "400": {
                    "$ref": "#/components/responses/Problem"
                  },
                  "401": {
                    "$ref": "#/components/responses/Problem"
                  },
                  "413": {
                    "$ref": "#/components/responses/Problem"
                  }
                }
              }
            },
            "/v1/admin/advertised-apps/{item}": {
              "parameters": [
                {
                  "name": "item",
                  "in": "path",
                  "required": true,
                  "schema": {
                    "type": "integer",
                    "minimum": 1
                  },
                  "description": "App Store item id"
                }
              ],
              "get": {
                "summary": "The advertised app's configuration as stored (without the keys the PUT listed under `ignored`)",
                "security": [{"adminToken": []}],
                "responses": {
                  "200": {"description": "the configuration as stored, as a PUT body (without `ignored` and the item id): it can be edited and sent back", "content": {"application/json": {"schema": {"type": "object"}}}},
                  "400": {"$ref": "#/components/responses/Problem"},
                  "401": {"$ref": "#/components/responses/Problem"},
                  "404": {"description": "not registered (`unknown-advertised-app`)", "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}}
                }
              },
              "delete": {
                "summary": "Delete the advertised app: its configuration, every app key (refused from then on, within 10 s on every ingest replica), every version of its conversion-value schema (a new registration starts at version 1) and its refusal list. Its conversions, updates and activity not yet verified are then refused (`unknown-advertised-app`); conversions already verified keep their attribution and their postbacks to the ad networks; copies to its `AttributionCopyEndpoint` stop (due ones are not made; retries are dead-lettered)",
                "security": [{"adminToken": []}],
                "responses": {
                  "200": {"description": "deleted", "content": {"application/json": {"schema": {"type": "object", "properties": {"advertised-item-identifier": {"type": "string"}, "deleted": {"type": "boolean"}}}}}},
                  "400": {"$ref": "#/components/responses/Problem"},
                  "401": {"$ref": "#/components/responses/Problem"},
                  "404": {"description": "not registered (`unknown-advertised-app`)", "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}}
                }
              },
              "put": {
                "summary": "Register an advertised app's AdAttributionKit configuration, as JSON or as its Info.plist (XML property list): keys flat or inside `AdAttributionKit` (Apple's layout) or `AdAttributionKitConfigurations`, Apple's `OptInForReengagementPostbackCopies` read as `EligibleForAdAttributionKitReengagementPostbackCopies`. Unknown keys inside those dictionaries (or at the top of JSON) are 400 `unknown-key`; nothing is dropped in silence (see `ignored`)",
                "security": [
                  {
                    "adminToken": []
                  }
                ],
                "requestBody": {
                  "required": true,
                  "content": {
                    "application/json": {
                      "schema": {
                        "$ref": "#/components/schemas/AdvertisedAppRequest"
                      }
                    },
                    "application/x-plist": {
                      "schema": {
                        "type": "string"
                      }
                    },
                    "application/xml": {
                      "schema": {
                        "type": "string"
                      }
                    }
                  }
                },
                "responses": {
                  "200": {
                    "description": "stored: the configuration as stored; `ignored` (present only when not empty) lists keys accepted but not honoured, each with why, which are not stored (`AttributionWindows.global.install.ignoreInteractionType`: honoured per ad network only)",
                    "content": {"application/json": {"schema": {"type": "object", "properties": {"ignored": {"type": "array", "items": {"type": "string"}}}}}}
                  },
                  "400": {
                    "$ref": "#/components/responses/Problem"
                  },
                  "401": {
                    "$ref": "#/components/responses/Problem"
                  },
                  "413": {
                    "$ref": "#/components/responses/Problem"
                  }
                }
              }
            },
            "/v1/admin/advertised-apps/{item}/keys": {
              "parameters": [
                {
                  "name": "item",
                  "in": "path",
                  "required": true,
                  "schema": {
                    "type": "integer",
                    "minimum": 1
                  },
                  "description": "App Store item id"
                }
              ],
              "post": {
                "summary": "Issue an app key for conversions and updates (shown once); an app may hold several live keys (rotation: issue, switch, revoke the old)",
                "security": [
                  {
                    "adminToken": []
                  }
                ],
                "responses": {
                  "201": {
                    "description": "the new key",
                    "content": {
                      "application/json": {
                        "schema": {
                          "$ref": "#/components/schemas/AppKey"
                        }
                      }
                    }
                  },
                  "400": {
                    "$ref": "#/components/responses/Problem"
                  },
                  "401": {
                    "$ref": "#/components/responses/Problem"
                  },
                  "404": {
                    "$ref": "#/components/responses/Problem"
                  }
                }
              },
              "get": {
                "summary": "The app's live keys: their ids and issue times, never the keys",
                "security": [{"adminToken": []}],
                "responses": {
                  "200": {"description": "the keys", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/AppKeys"}}}},
                  "400": {"$ref": "#/components/responses/Problem"},
                  "401": {"$ref": "#/components/responses/Problem"}
                }
              }
            },
            "/v1/admin/advertised-apps/{item}/keys/{key}": {
              "parameters": [
                {"name": "item", "in": "path", "required": true, "schema": {"type": "integer", "minimum": 1}, "description": "App Store item id"},
                {"name": "key", "in": "path", "required": true, "schema": {"type": "string"}, "description": "the key's `key-identifier`"}
              ],
              "delete": {
                "summary": "Revoke one of the app's keys: refused (401 invalid-app-key) from then on, within 10 s on every ingest replica (each remembers a key's app that long)",
                "security": [{"adminToken": []}],
                "responses": {
                  "200": {"description": "revoked", "content": {"application/json": {"schema": {"type": "object", "properties": {"advertised-item-identifier": {"type": "string"}, "key-identifier": {"type": "string"}, "revoked": {"type": "boolean"}}}}}},
                  "400": {"$ref": "#/components/responses/Problem"},
                  "401": {"$ref": "#/components/responses/Problem"},
                  "404": {"$ref": "#/components/responses/Problem"}
                }
              }
            },
            "/v1/admin/advertised-apps/{item}/rejections": {
              "parameters": [
                {
                  "name": "item",
                  "in": "path",
                  "required": true,
                  "schema": {
                    "type": "integer",
                    "minimum": 1
                  },
                  "description": "App Store item id"
                }
              ],
              "get": {
                "summary": "Recent refusals of this app's conversions and updates, newest first",
                "security": [
                  {
                    "adminToken": []
                  }
                ],
                "responses": {
                  "200": {
                    "description": "up to 100 refusals",
                    "content": {
                      "application/json": {
                        "schema": {
                          "$ref": "#/components/schemas/Rejections"
                        }
                      }
                    }
                  },
                  "400": {
                    "$ref": "#/components/responses/Problem"
                  },
                  "401": {
                    "$ref": "#/components/responses/Problem"
                  }
                }
              }
            },
            "/v1/admin/dead-letters": {
              "get": {
                "summary": "Postbacks that exhausted their retries or may not be sent, newest first",
                "security": [{"adminToken": []}],
                "parameters": [
                  {"name": "count", "in": "query", "required": false, "schema": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100}},
                  {"name": "before", "in": "query", "required": false, "schema": {"type": "string", "pattern": "^[0-9]+-[0-9]+-[0-9]+$"}, "description": "the previous page's `next`: list the dead letters after it"}
                ],
                "responses": {
                  "200": {
                    "description": "dead letters and their total",
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/DeadLetters"}}}
                  },
                  "400": {"$ref": "#/components/responses/Problem"},
                  "401": {"$ref": "#/components/responses/Problem"}
                }
              }
            },
            "/v1/admin/dead-letters/{id}/replay": {
              "parameters": [
                {"name": "id", "in": "path", "required": true, "schema": {"type": "string", "pattern": "^[0-9]+-[0-9]+-[0-9]+$"}, "description": "dead letter id as listed: `<partition>-<stream entry id>`, e.g. `7-1700000000000-0`"}
              ],
              "post": {
                "summary": "Replay one dead letter: a fresh series of attempts, signed with the current key",
                "security": [{"adminToken": []}],
                "responses": {
                  "200": {"description": "replayed", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Replayed"}}}},
                  "400": {"$ref": "#/components/responses/Problem"},
                  "401": {"$ref": "#/components/responses/Problem"},
                  "404": {"$ref": "#/components/responses/Problem"},
                  "409": {"$ref": "#/components/responses/Problem"}
                }
              }
            },
            "/v1/admin/dead-letters/replay": {
              "post": {
                "summary": "Replay every dead letter, oldest first",
                "security": [{"adminToken": []}],
                "responses": {
                  "200": {"description": "how many were replayed", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Replayed"}}}},
                  "401": {"$ref": "#/components/responses/Problem"}
                }
              }
            },
            "/v1/admin/advertised-apps/{item}/conversion-value-schema": {
              "parameters": [{"name": "item", "in": "path", "required": true, "schema": {"type": "integer", "minimum": 1}, "description": "App Store item id"}],
              "put": {
                "summary": "Upload a new conversion-value schema version (conversions keep the version in force when attributed)",
                "security": [{"adminToken": []}],
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ConversionValueSchema"}}}},
                "responses": {
                  "201": {"description": "stored, with its version", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ConversionValueSchema"}}}},
                  "400": {"$ref": "#/components/responses/Problem"},
                  "401": {"$ref": "#/components/responses/Problem"},
                  "404": {"$ref": "#/components/responses/Problem"},
                  "413": {"$ref": "#/components/responses/Problem"}
                }
              },
              "get": {
                "summary": "The current conversion-value schema",
                "security": [{"adminToken": []}],
                "responses": {
                  "200": {"description": "the schema", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ConversionValueSchema"}}}},
                  "400": {"$ref": "#/components/responses/Problem"},
                  "401": {"$ref": "#/components/responses/Problem"},
                  "404": {"$ref": "#/components/responses/Problem"}
                }
              }
            },
            "/v1/admin/advertised-apps/{item}/conversion-value-schema/{version}": {
              "parameters": [{"name": "item", "in": "path", "required": true, "schema": {"type": "integer", "minimum": 1}, "description": "App Store item id"}, {"name": "version", "in": "path", "required": true, "schema": {"type": "integer", "minimum": 1}}],
              "get": {
                "summary": "One version of the conversion-value schema",
                "security": [{"adminToken": []}],
                "responses": {
                  "200": {"description": "the schema", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ConversionValueSchema"}}}},
                  "400": {"$ref": "#/components/responses/Problem"},
                  "401": {"$ref": "#/components/responses/Problem"},
                  "404": {"$ref": "#/components/responses/Problem"}
                }
              }
            },
            "/v1/activity": {
              "post": {
                "summary": "Report a device's sessions, named events and revenue; the pinned schema turns them into value updates",
                "security": [{"appKey": []}],
                "parameters": [{"name": "Idempotency-Key", "in": "header", "required": false, "schema": {"type": "string", "minLength": 1, "maxLength": 255}, "description": "a retry with the same key and body returns the first answer; with another body, 422. Remembered 24 h per route, device and advertised app"}],
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ActivityReport"}}}},
                "responses": {
                  "503": {"description": "not acknowledged; retry after `Retry-After` seconds with the same `Idempotency-Key`. `overloaded` (ingest at capacity: `INGEST_MAX_IN_FLIGHT`, `INGEST_QUEUE_TARGET_MS`) and `pipeline-lagging` (the verifier past `INGEST_MAX_EVENTS_LAG` behind) are answered at once and wrote nothing; `redis-unreachable` (Redis unavailable) and `replication-timeout` (written, not yet on a replica) may have written it", "headers": {"Retry-After": {"schema": {"type": "integer"}}}, "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}},
                  "429": {"description": "`rate-limited`: this caller (ad network or app) is past `INGEST_CALLER_RATE`; nothing was written, retry after `Retry-After` seconds", "headers": {"Retry-After": {"schema": {"type": "integer"}}}, "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}},
                  "202": {"description": "accepted", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Accepted"}}}},
                  "400": {"$ref": "#/components/responses/Problem"},
                  "401": {"$ref": "#/components/responses/Problem"},
                  "403": {"$ref": "#/components/responses/Problem"},
                  "413": {"$ref": "#/components/responses/Problem"},
                  "422": {"$ref": "#/components/responses/Problem"}
                }
              }
            },
            "/v1/conversion-values/evaluate": {
              "post": {
                "summary": "The value an app would report next for these window totals (read-only)",
                "security": [{"appKey": []}],
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/EvaluationRequest"}}}},
                "responses": {
                  "200": {"description": "the value, and whether it is an update", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Evaluation"}}}},
                  "400": {"$ref": "#/components/responses/Problem"},
                  "401": {"$ref": "#/components/responses/Problem"},
                  "403": {"$ref": "#/components/responses/Problem"},
                  "404": {"$ref": "#/components/responses/Problem"}
                }
              }
            },
            \#(batchRoute("/v1/impressions", "ImpressionRequest", "impressions", appKey: false)),
            \#(batchRoute("/v1/conversions", "ConversionRequest", "conversions", appKey: true)),
            \#(batchRoute("/v1/conversion-value-updates", "ValueUpdateRequest", "conversion-value updates", appKey: true)),
            \#(batchRoute("/v1/activity", "ActivityReport", "activity reports", appKey: true)),
            "/v1/admin/devices/{device}": {
              "parameters": [{"name": "device", "in": "path", "required": true, "schema": {"type": "string", "minLength": 1, "maxLength": 128}, "description": "device identifier"}],
              "delete": {
                "summary": "Erase everything held about one device (pools, histories, view sets, idempotency records, unprocessed events, dead letters)",
                "description": "Messages are matched by the device their decoded body names, exactly; keys by their exact name. The path segment is percent-decoded once (`%2F` names a `/`, `%20` a space; invalid percent-encoding is 400 `invalid-device-identifier`); POST /v1/admin/device-erasures takes the identifier in a body instead",
                "security": [{"adminToken": []}],
                "responses": {
                  "200": {"description": "what was deleted", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Erased"}}}},
                  "400": {"$ref": "#/components/responses/Problem"},
                  "401": {"$ref": "#/components/responses/Problem"}
                }
              }
            },
            "/v1/admin/device-erasures": {
              "post": {
                "summary": "Erase everything held about one device, named in the body (any identifier, `/` included)",
                "security": [{"adminToken": []}],
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["device-identifier"], "properties": {"device-identifier": {"type": "string", "minLength": 1, "maxLength": 128}}}}}},
                "responses": {
                  "200": {"description": "what was deleted", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Erased"}}}},
                  "400": {"$ref": "#/components/responses/Problem"},
                  "401": {"$ref": "#/components/responses/Problem"},
                  "413": {"$ref": "#/components/responses/Problem"}
                }
              }
            },

            "/v1/admin/ad-networks/{id}/credentials": {
              "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string", "pattern": "^[a-z0-9._-]{1,255}$"}, "description": "ad network id, lowercase"}],
              "post": {
                "summary": "Issue a credential for the ad network (shown once): on the public listener it reads the network's registration and refusals (`GET /v1/ad-networks/{id}`, `…/rejections`) and asks for test postbacks (`POST /v1/ad-networks/{id}/test-postbacks`), and nothing else. Several may be live (rotation: issue, switch, revoke the old)",
                "security": [{"adminToken": []}],
                "responses": {
                  "201": {"description": "the new credential", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/NetworkCredential"}}}},
                  "400": {"$ref": "#/components/responses/Problem"},
                  "401": {"$ref": "#/components/responses/Problem"},
                  "404": {"description": "not registered (`unknown-ad-network`)", "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}}
                }
              },
              "get": {
                "summary": "The network's live credentials: their ids and issue times, never the credentials",
                "security": [{"adminToken": []}],
                "responses": {
                  "200": {"description": "the credentials", "content": {"application/json": {"schema": {"type": "object", "required": ["ad-network-identifier", "credentials"], "properties": {"ad-network-identifier": {"type": "string"}, "credentials": {"type": "array", "items": {"type": "object", "required": ["credential-identifier"], "properties": {"credential-identifier": {"type": "string"}, "issued-at": {"type": "integer"}}}}}}}}},
                  "400": {"$ref": "#/components/responses/Problem"},
                  "401": {"$ref": "#/components/responses/Problem"}
                }
              }
            },
            "/v1/admin/ad-networks/{id}/credentials/{credential}": {
              "parameters": [
                {"name": "id", "in": "path", "required": true, "schema": {"type": "string", "pattern": "^[a-z0-9._-]{1,255}$"}, "description": "ad network id, lowercase"},
                {"name": "credential", "in": "path", "required": true, "schema": {"type": "string"}, "description": "the credential's `credential-identifier`"}
              ],
              "delete": {
                "summary": "Revoke one of the network's credentials: refused (401) from its next request",
                "security": [{"adminToken": []}],
                "responses": {
                  "200": {"description": "revoked", "content": {"application/json": {"schema": {"type": "object", "properties": {"ad-network-identifier": {"type": "string"}, "credential-identifier": {"type": "string"}, "revoked": {"type": "boolean"}}}}}},
                  "400": {"$ref": "#/components/responses/Problem"},
                  "401": {"$ref": "#/components/responses/Problem"},
                  "404": {"description": "no such credential (`unknown-credential`)", "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}}
                }
              }
            },
            "/v1/ad-networks/{id}": {
              "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string", "pattern": "^[a-z0-9._-]{1,255}$"}, "description": "ad network id, lowercase"}],
              "get": {
                "summary": "The ad network's own registration, read with one of its credentials (public listener)",
                "security": [{"networkCredential": []}],
                "responses": {
                  "200": {"description": "the registration", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/AdNetworkRegistration"}}}},
                  "400": {"$ref": "#/components/responses/Problem"},
                  "401": {"description": "no live credential (`unauthorized`); `ADMIN_TOKEN` is not one", "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}},
                  "403": {"description": "another network's credential (`credential-mismatch`)", "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}},
                  "404": {"$ref": "#/components/responses/Problem"}
                }
              }
            },
            "/v1/ad-networks/{id}/rejections": {
              "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string", "pattern": "^[a-z0-9._-]{1,255}$"}, "description": "ad network id, lowercase"}],
              "get": {
                "summary": "Recent refusals of the network's impressions, read with one of its credentials (public listener); the same answer as the admin route",
                "security": [{"networkCredential": []}],
                "responses": {
                  "200": {"description": "up to 100 refusals, and the unsigned ones apart", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Rejections"}}}},
                  "400": {"$ref": "#/components/responses/Problem"},
                  "401": {"description": "no live credential (`unauthorized`)", "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}},
                  "403": {"description": "another network's credential (`credential-mismatch`)", "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}}
                }
              }
            },
            "/v1/ad-networks/{id}/test-postbacks": {
              "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string", "pattern": "^[a-z0-9._-]{1,255}$"}, "description": "ad network id, lowercase"}],
              "post": {
                "summary": "Test postbacks for the network's receiver, the server-side counterpart of Apple's developer-settings postbacks: the tier, interaction, conversion type, one or three windows, conversion tag, values and country chosen; made by the same field gating as real postbacks (tier 0 and non-winners get the first window's only), signed with the development key, sent at once through the dispatcher. Nothing of it enters a crowd, a cap or a device's state. At most 10 requests a minute per network (both listeners together); with one of the network's credentials (public listener)",
                "security": [{"networkCredential": []}],
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/TestPostbackRequest"}}}},
                "responses": {
                  "202": {"description": "on its way: the postbacks reach the network's registered `postback-url` within a second or two (and the advertised app's `AttributionCopyEndpoint`, for a winner, as real ones do), signed with the development key; failures are retried and dead-lettered as for any postback", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/TestPostbacksAccepted"}}}},
                  "400": {"description": "a choice out of range (`value-out-of-range`, `invalid-item-identifier`, `invalid-country-code`, `invalid-conversion-tag`, `conversion-tag-not-supported`), a member the request does not have (`unknown-key`), a body naming another network (`invalid-body`), or not this JSON (`invalid-json`)", "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}},
                  "401": {"description": "no live credential (`unauthorized`)", "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}},
                  "403": {"description": "another network's credential (`credential-mismatch`)", "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}},
                  "404": {"description": "not registered (`unknown-ad-network`)", "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}},
                  "413": {"$ref": "#/components/responses/Problem"},
                  "429": {"description": "the network's 10 requests of the current minute are spent (`rate-limited`, with `Retry-After`)", "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}},
                  "503": {"$ref": "#/components/responses/Problem"}
                }
              }
            },
            "/v1/admin/ad-networks/{id}/test-postbacks": {
              "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string", "pattern": "^[a-z0-9._-]{1,255}$"}, "description": "ad network id, lowercase"}],
              "post": {
                "summary": "Test postbacks for the network's receiver, the server-side counterpart of Apple's developer-settings postbacks: the tier, interaction, conversion type, one or three windows, conversion tag, values and country chosen; made by the same field gating as real postbacks (tier 0 and non-winners get the first window's only), signed with the development key, sent at once through the dispatcher. Nothing of it enters a crowd, a cap or a device's state. At most 10 requests a minute per network (both listeners together); with `ADMIN_TOKEN` (admin listener)",
                "security": [{"adminToken": []}],
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/TestPostbackRequest"}}}},
                "responses": {
                  "202": {"description": "on its way: the postbacks reach the network's registered `postback-url` within a second or two (and the advertised app's `AttributionCopyEndpoint`, for a winner, as real ones do), signed with the development key; failures are retried and dead-lettered as for any postback", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/TestPostbacksAccepted"}}}},
                  "400": {"description": "a choice out of range (`value-out-of-range`, `invalid-item-identifier`, `invalid-country-code`, `invalid-conversion-tag`, `conversion-tag-not-supported`), a member the request does not have (`unknown-key`), a body naming another network (`invalid-body`), or not this JSON (`invalid-json`)", "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}},
                  "401": {"$ref": "#/components/responses/Problem"},
                  "404": {"description": "not registered (`unknown-ad-network`)", "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}},
                  "413": {"$ref": "#/components/responses/Problem"},
                  "429": {"description": "the network's 10 requests of the current minute are spent (`rate-limited`, with `Retry-After`)", "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}},
                  "503": {"$ref": "#/components/responses/Problem"}
                }
              }
            },
            "/.well-known/jwks.json": {
              "get": {
                "summary": "The public keys postbacks are signed with",
                "responses": {
                  "200": {
                    "description": "JSON Web Key Set",
                    "content": {
                      "application/json": {
                        "schema": {
                          "$ref": "#/components/schemas/JWKSet"
                        }
                      }
                    }
                  }
                }
              }
            },
            "/openapi.json": {
              "get": {
                "summary": "This document",
                "responses": {
                  "200": {
                    "description": "OpenAPI 3.1",
                    "content": {
                      "application/json": {
                        "schema": {
                          "type": "object"
                        }
                      }
                    }
                  }
                }
              }
            },
            "/health": {
              "get": {
                "summary": "Liveness (both listeners)",
                "responses": {
                  "200": {
                    "description": "alive"
                  }
                }
              },
              "head": {
                "summary": "Liveness without a body, for load balancers that check with HEAD (both listeners)",
                "responses": {
                  "200": {
                    "description": "alive"
                  }
                }
              }
            },
            "/ready": {
              "get": {
                "summary": "Readiness: Redis answers (both listeners)",
                "responses": {
                  "200": {
                    "description": "ready"
                  },
                  "503": {
                    "description": "not ready: `redis-unreachable`; only the admin listener's `detail` carries Redis's error text",
                    "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}
                  }
                }
              }
            },
            "/metrics": {
              "get": {
                "summary": "Prometheus metrics",
                "responses": {
                  "200": {
                    "description": "text exposition format",
                    "content": {
                      "text/plain": {
                        "schema": {
                          "type": "string"
                        }
                      }
                    }
                  }
                }
              }
            }
          },
          "components": {
            "securitySchemes": {
              "adminToken": {
                "type": "http",
                "scheme": "bearer",
                "description": "ADMIN_TOKEN"
              },
              "networkCredential": {
                "type": "http",
                "scheme": "bearer",
                "description": "an ad network's credential (reads its registration and refusals, asks for test postbacks), issued by POST /v1/admin/ad-networks/{id}/credentials"
              },
              "appKey": {
                "type": "http",
                "scheme": "bearer",
                "description": "an app key issued by POST /v1/admin/advertised-apps/{item}/keys"
              }
            },
            "responses": {
              "Problem": {
                "description": "RFC 9457 problem",
                "content": {
                  "application/problem+json": {
                    "schema": {
                      "$ref": "#/components/schemas/Problem"
                    }
                  }
                }
              }
            },
            "schemas": {
              "TestPostbackRequest": {
                "type": "object",
                "required": ["tier", "advertised-item-identifier"],
                "additionalProperties": false,
                "properties": {
                  "tier": {"type": "integer", "minimum": 0, "maximum": 3, "description": "the crowd anonymity tier whose fields the postbacks carry"},
                  "advertised-item-identifier": {"type": "integer", "minimum": 1, "description": "the app the postbacks name"},
                  "ad-interaction-type": {"type": "string", "enum": ["click", "view"], "default": "click"},
                  "conversion-type": {"type": "string", "enum": ["download", "redownload", "re-engagement"], "default": "download"},
                  "windows": {"type": "integer", "enum": [1, 3], "default": 1, "description": "the first window's postback, or one per window (a winner at tier 1 or above; tier 0 and non-winners get the first only)"},
                  "conversion-tag": {"type": "string", "description": "re-engagements only (else `conversion-tag-not-supported`), a lowercase UUID (else `invalid-conversion-tag`); checked and echoed, not carried: postbacks have no tag"},
                  "conversion-value": {"type": "integer", "minimum": 0, "maximum": 63, "description": "the fine value, sent at tiers 2 and 3 in the first window"},
                  "coarse-conversion-value": {"type": "string", "enum": ["low", "medium", "high"], "description": "sent from tier 1 where no fine value goes, and in later windows"},
                  "country-code": {"type": "string", "pattern": "^[A-Z]{2}$", "description": "ISO 3166-1 alpha-2, sent at tier 3 in a winner's first postback"},
                  "did-win": {"type": "boolean", "default": true},
                  "publisher-item-identifier": {"type": "integer", "minimum": 0, "default": 0, "description": "sent at tier 3 in a winner's first postback"},
                  "source-identifier": {"type": "integer", "minimum": 0, "maximum": 9999, "default": 1234, "description": "its last 2 digits at tiers 0 and 1, in later windows and in non-winners"},
                  "source-identifier-digits": {"type": "integer", "minimum": 2, "maximum": 4, "default": 4, "description": "the digits a tier 2 or 3 first postback keeps (2 at tiers 0 and 1)"},
                  "ad-network-identifier": {"type": "string", "description": "optional; when present, the path's"}
                }
              },
              "TestPostbacksAccepted": {
                "type": "object",
                "required": ["ad-network-identifier", "event-identifier", "postback-identifiers", "tier", "development"],
                "properties": {
                  "ad-network-identifier": {"type": "string"},
                  "event-identifier": {"type": "string", "description": "the request's id on `events`"},
                  "postback-identifiers": {"type": "array", "items": {"type": "string"}, "description": "one per postback made, in window order: each postback's `postback-identifier`"},
                  "tier": {"type": "integer"},
                  "development": {"type": "boolean", "const": true, "description": "signed with the development key (its `kid` is in the JWKS)"},
                  "conversion-tag": {"type": "string", "description": "echoed when asked"}
                }
              },
              "NetworkCredential": {
                "type": "object",
                "required": ["credential", "ad-network-identifier", "credential-identifier", "issued-at"],
                "properties": {
                  "credential": {"type": "string", "description": "`nc_` and 64 hex digits; shown only here, Redis keeps its SHA-256"},
                  "ad-network-identifier": {"type": "string"},
                  "credential-identifier": {"type": "string", "description": "first 12 hex digits of the credential's SHA-256: what listing and revoking use"},
                  "issued-at": {"type": "integer"}
                }
              },
              "Erased": {
                "type": "object",
                "required": ["device-identifier", "deleted-keys", "deleted-entries"],
                "properties": {
                  "device-identifier": {"type": "string"},
                  "deleted-keys": {"type": "integer"},
                  "deleted-entries": {"type": "integer"}
                }
              },
              "Counts": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}, "description": "event name → count"},
              "Revenue": {"type": "object", "additionalProperties": {"type": "number", "minimum": 0}, "description": "ISO 4217 code → amount"},
              "ConversionValueSchema": {
                "type": "object",
                "required": ["windows"],
                "properties": {
                  "version": {"type": "integer", "description": "assigned on upload"},
                  "windows": {
                    "type": "array",
                    "items": {
                      "type": "object",
                      "required": ["window", "rules"],
                      "properties": {
                        "window": {"type": "integer", "minimum": 0, "maximum": 2},
                        "allow-decrease": {"type": "boolean"},
                        "rules": {
                          "type": "array",
                          "description": "most valuable first: the first rule whose condition holds gives the value",
                          "items": {
                            "type": "object",
                            "required": ["when", "fine", "coarse"],
                            "properties": {
                              "when": {
                                "type": "object",
                                "properties": {
                                  "sessions": {"type": "integer", "minimum": 0},
                                  "events": {"$ref": "#/components/schemas/Counts"},
                                  "revenue": {"$ref": "#/components/schemas/Revenue"}
                                }
                              },
                              "fine": {"type": "integer", "minimum": 0, "maximum": 63},
                              "coarse": {"type": "string", "enum": ["low", "medium", "high"]},
                              "lock": {"type": "boolean"}
                            }
                          }
                        }
                      }
                    }
                  }
                }
              },
              "ActivityReport": {
                "type": "object",
                "required": ["device-identifier", "advertised-item-identifier", "time"],
                "properties": {
                  "device-identifier": {"type": "string", "minLength": 1, "maxLength": 128},
                  "advertised-item-identifier": {"type": "integer", "minimum": 1},
                  "time": {"type": "integer", "description": "ms since 1970"},
                  "sessions": {"type": "integer", "minimum": 0},
                  "events": {"$ref": "#/components/schemas/Counts"},
                  "revenue": {"$ref": "#/components/schemas/Revenue"},
                  "conversionTag": {"type": "string", "description": "routes the activity to the re-engagement conversion with this tag, as an update's does"},
                  "conversion-tag": {"type": "string", "description": "the same as `conversionTag` (the conversion's answer spells it so); both at once must agree"}
                },
                "anyOf": [{"required": ["sessions"]}, {"required": ["events"]}, {"required": ["revenue"]}],
                "description": "at least one of `sessions`, `events`, `revenue` (else 400 `invalid-activity`)"
              },
              "EvaluationRequest": {
                "type": "object",
                "required": ["advertised-item-identifier", "window"],
                "properties": {
                  "advertised-item-identifier": {"type": "integer", "minimum": 1},
                  "window": {"type": "integer", "minimum": 0, "maximum": 2},
                  "sessions": {"type": "integer", "minimum": 0},
                  "events": {"$ref": "#/components/schemas/Counts"},
                  "revenue": {"$ref": "#/components/schemas/Revenue"},
                  "previous": {
                    "type": "object",
                    "required": ["fine", "coarse", "lock"],
                    "properties": {
                      "fine": {"type": "integer", "minimum": 0, "maximum": 63},
                      "coarse": {"type": "string", "enum": ["low", "medium", "high"]},
                      "lock": {"type": "boolean"}
                    }
                  },
                  "version": {"type": "integer", "minimum": 1}
                }
              },
              "Evaluation": {
                "type": "object",
                "required": ["version", "changed"],
                "properties": {
                  "version": {"type": "integer"},
                  "changed": {"type": "boolean"},
                  "fineConversionValue": {"type": "integer"},
                  "coarseConversionValue": {"type": "string", "enum": ["low", "medium", "high"]},
                  "lockPostback": {"type": "boolean"}
                }
              },
              "DeadLetters": {
                "type": "object",
                "required": ["dead-letters", "total"],
                "properties": {
                  "total": {"type": "integer"},
                  "next": {"type": "string", "description": "present when the page is full: pass it as `before` for the next page"},
                  "dead-letters": {
                    "type": "array",
                    "items": {
                      "type": "object",
                      "required": ["id", "postback-identifier", "destination", "error", "replayable"],
                      "properties": {
                        "id": {"type": "string"},
                        "postback-identifier": {"type": "string"},
                        "destination": {"type": "string", "enum": ["ad-network", "advertiser-copy"]},
                        "error": {"type": "string"},
                        "url": {"type": "string"},
                        "attempts": {"type": "integer"},
                        "first-attempt-at": {"type": "integer", "description": "ms since 1970"},
                        "replayable": {"type": "boolean"}
                      }
                    }
                  }
                }
              },
              "Replayed": {
                "type": "object",
                "required": ["replayed"],
                "properties": {"replayed": {"type": "integer"}}
              },
              "Problem": {
                "type": "object",
                "required": [
                  "type",
                  "title",
                  "status",
                  "detail",
                  "reason"
                ],
                "properties": {
                  "type": {
                    "type": "string"
                  },
                  "title": {
                    "type": "string"
                  },
                  "status": {
                    "type": "integer"
                  },
                  "detail": {
                    "type": "string"
                  },
                  "event-identifier": {
                    "type": "string",
                    "description": "`replication-timeout` only: the event that was written (a keyed retry returns the same id)"
                  },
                  "reason": {
                    "type": "string",
                    "description": "stable machine-readable code (ProblemReason)",
                    "enum": \#(reasons(in: .problemDetails))
                  }
                }
              },
              "BatchItemKey": {
                "type": "object",
                "properties": {"idempotency-key": {"type": "string", "minLength": 1, "maxLength": 255, "description": "this item's Idempotency-Key: a retry with the same key and item returns the first answer"}}
              },
              "BatchAnswer": {
                "type": "object",
                "required": ["accepted", "refused", "results"],
                "properties": {
                  "accepted": {"type": "integer", "description": "items answered 202"},
                  "refused": {"type": "integer", "description": "items answered with a problem"},
                  "results": {"type": "array", "items": {"$ref": "#/components/schemas/BatchResult"}, "description": "one per item, in the order sent"}
                }
              },
              "BatchResult": {
                "type": "object",
                "required": ["status"],
                "properties": {
                  "status": {"type": "integer", "description": "202, or the problem's status"},
                  "event-identifier": {"type": "string", "description": "when 202; also with a 503 `replication-timeout` (the event was written)"},
                  "conversion-tag": {"type": "string", "description": "when 202 for a re-engagement conversion"},
                  "type": {"type": "string"},
                  "title": {"type": "string"},
                  "reason": {"type": "string", "description": "when refused: the problem's reason, one of Problem's `reason` values"},
                  "detail": {"type": "string"}
                }
              },
              "Accepted": {
                "type": "object",
                "required": [
                  "event-identifier"
                ],
                "properties": {
                  "event-identifier": {
                    "type": "string"
                  },
                  "conversion-tag": {
                    "type": "string",
                    "description": "re-engagement conversions: the AdAttributionKitReengagementOpen value; updates carrying it as conversionTag apply to this conversion alone"
                  }
                }
              },
              "Interaction": {
                "description": "how the person met the ad: a click, a view with its time on screen (begin and end, as SKAdNetwork's startImpression and endImpression record it), or a view recorded in one call (AdAttributionKit's `AppImpression.handleView()`, iOS 26.2)",
                "oneOf": [
                  {"$ref": "#/components/schemas/ClickInteraction"},
                  {"$ref": "#/components/schemas/BeginEndViewInteraction"},
                  {"$ref": "#/components/schemas/OneCallViewInteraction"}
                ]
              },
              "ClickInteraction": {
                "type": "object",
                "required": ["type", "time", "loaded-at"],
                "properties": {
                  "type": {"type": "string", "enum": ["click"]},
                  "time": {"type": "integer", "description": "the tap"},
                  "loaded-at": {
                    "type": "integer",
                    "description": "when the impression was loaded (a tap counts within 15 minutes; not after `time`, else 400 `invalid-interaction`)"
                  }
                }
              },
              "BeginEndViewInteraction": {
                "type": "object",
                "required": ["type", "time", "begin"],
                "properties": {
                  "type": {"type": "string", "enum": ["view"]},
                  "time": {"type": "integer", "description": "the end of the view"},
                  "begin": {
                    "type": "integer",
                    "description": "when the ad appeared (the view counts after 2 s on screen, else it is refused `view-too-short`; not after `time`, else 400 `invalid-interaction`). One ad network may have one such view of an app open on a device at a time (`overlapping-view`)"
                  }
                }
              },
              "OneCallViewInteraction": {
                "type": "object",
                "description": "a view recorded in one call (`handleView()`), AdAttributionKit only (a SKAdNetwork view without `begin` is 400 `invalid-interaction`): a view at `time` for winner selection, recency and the view caps; Apple documents neither a minimum time on screen nor the one-open-view rule for it, so neither applies",
                "required": ["type", "time"],
                "not": {"required": ["begin"]},
                "properties": {
                  "type": {"type": "string", "enum": ["view"]},
                  "time": {"type": "integer", "description": "when the view was recorded"}
                }
              },
              "ImpressionRequest": {
                "type": "object",
                "description": "exactly one of impression (AdAttributionKit) and skadnetwork-impression (SKAdNetwork 4.0)",
                "required": [
                  "device-identifier",
                  "interaction"
                ],
                "properties": {
                  "device-identifier": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 128
                  },
                  "impression": {
                    "type": "string",
                    "description": "compact JWS, ES256, kid = ad network id"
                  },
                  "skadnetwork-impression": {
                    "$ref": "#/components/schemas/SKANImpression"
                  },
                  "interaction": {
                    "$ref": "#/components/schemas/Interaction"
                  }
                }
              },
              "SKANImpression": {
                "type": "object",
                "description": "signed by the network's SKAdNetwork key: ECDSA P-256 over the fields joined by U+2063, DER, base64",
                "required": [
                  "version",
                  "ad-network-id",
                  "source-identifier",
                  "itunes-item-id",
                  "nonce",
                  "source-app-id",
                  "fidelity-type",
                  "timestamp",
                  "signature"
                ],
                "properties": {
                  "version": {
                    "type": "string",
                    "enum": [
                      "4.0"
                    ]
                  },
                  "ad-network-id": {
                    "type": "string"
                  },
                  "source-identifier": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": 9999
                  },
                  "itunes-item-id": {
                    "type": "integer",
                    "minimum": 1
                  },
                  "nonce": {
                    "type": "string",
                    "description": "lowercase UUID"
                  },
                  "source-app-id": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "0 in development"
                  },
                  "fidelity-type": {
                    "type": "integer",
                    "enum": [
                      0,
                      1
                    ],
                    "description": "1 = StoreKit-rendered (click), 0 = view-through"
                  },
                  "timestamp": {
                    "type": "integer"
                  },
                  "signature": {
                    "type": "string",
                    "maxLength": 256,
                    "description": "base64 DER ECDSA P-256 signature (at most 96 characters); longer is refused with invalid-skadnetwork-impression"
                  }
                }
              },
              "ConversionRequest": {
                "type": "object",
                "required": [
                  "device-identifier",
                  "advertised-item-identifier",
                  "conversion-type",
                  "time"
                ],
                "properties": {
                  "device-identifier": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 128
                  },
                  "advertised-item-identifier": {
                    "type": "integer",
                    "minimum": 0
                  },
                  "conversion-type": {
                    "type": "string",
                    "enum": [
                      "download",
                      "redownload",
                      "re-engagement",
                      "reengagement"
                    ]
                  },
                  "time": {
                    "type": "integer"
                  },
                  "country-code": {
                    "type": "string",
                    "pattern": "^[A-Z]{2}$",
                    "description": "ISO 3166-1 alpha-2, an assigned code (Apple's pages say ISO 3166-2 but show these two-letter codes; Kosovo's user-assigned XK is accepted too); anything else is 400 `invalid-country-code`. A re-engagement without one takes the country of the app's latest install on the device, when that install reported one"
                  },
                  "marketplace-identifier": {
                    "type": "string",
                    "maxLength": 255,
                    "pattern": "^[A-Za-z0-9-]+(\\.[A-Za-z0-9-]+)+$",
                    "description": "the store the app was installed from, as its bundle id; absent: the App Store (com.apple.AppStore). Postbacks carry it as their `marketplace-identifier` (tiers 1–3). Otherwise 400 `invalid-marketplace-identifier`"
                  }
                }
              },
              "ValueUpdateRequest": {
                "description": "a conversion-value update in AdAttributionKit's shape or in SKAdNetwork's; one body is one shape (members of both: `invalid-json`). Either reaches the app's pending conversion, whichever framework's impression won",
                "oneOf": [
                  {"$ref": "#/components/schemas/AdAttributionKitValueUpdate"},
                  {"$ref": "#/components/schemas/SKAdNetworkValueUpdate"}
                ]
              },
              "ValueUpdateSubject": {
                "description": "which device, app and moment an update is about: the members both shapes of an update carry",
                "type": "object",
                "required": [
                  "device-identifier",
                  "advertised-item-identifier",
                  "time"
                ],
                "properties": {
                  "device-identifier": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 128
                  },
                  "advertised-item-identifier": {
                    "type": "integer",
                    "minimum": 0
                  },
                  "time": {
                    "type": "integer"
                  }
                }
              },
              "AdAttributionKitValueUpdate": {
                "description": "AdAttributionKit's `PostbackUpdate`, its members as Apple spells them, beside `ValueUpdateSubject`'s",
                "allOf": [{"$ref": "#/components/schemas/ValueUpdateSubject"}],
                "type": "object",
                "required": [
                  "fineConversionValue"
                ],
                "properties": {
                  "fineConversionValue": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": 63
                  },
                  "coarseConversionValue": {
                    "type": "string",
                    "enum": [
                      "low",
                      "medium",
                      "high"
                    ]
                  },
                  "lockPostback": {
                    "type": "boolean"
                  },
                  "conversionTypes": {
                    "type": "array",
                    "items": {
                      "type": "string",
                      "enum": [
                        "install",
                        "reengagement"
                      ]
                    }
                  },
                  "conversionTag": {
                    "type": "string"
                  },
                  "conversion-tag": {
                    "type": "string",
                    "description": "the same as `conversionTag` (the conversion's answer spells it so); both at once must agree"
                  }
                }
              },
              "SKAdNetworkValueUpdate": {
                "description": "the arguments of SKAdNetwork's `updatePostbackConversionValue(_:coarseValue:lockWindow:)`. The same update as AdAttributionKit's, with no conversion types or tag; one that no conversion takes within 2 days (an organic install's) is ignored and counted in `winner_skadnetwork_updates_ignored_total`, not refused. Beside `ValueUpdateSubject`'s members",
                "allOf": [{"$ref": "#/components/schemas/ValueUpdateSubject"}],
                "type": "object",
                "required": [
                  "fineValue"
                ],
                "properties": {
                  "fineValue": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": 63
                  },
                  "coarseValue": {
                    "type": "string",
                    "enum": [
                      "low",
                      "medium",
                      "high"
                    ]
                  },
                  "lockWindow": {
                    "type": "boolean"
                  }
                }
              },
              "AdNetworkRequest": {
                "type": "object",
                "required": [
                  "public-key",
                  "postback-url"
                ],
                "properties": {
                  "public-key": {
                    "type": "string",
                    "description": "ES256 public key, PEM or JWK JSON (a JWK with its private `d`, or an `alg` other than ES256, is refused)"
                  },
                  "postback-url": {
                    "type": "string",
                    "format": "uri"
                  },
                  "skan-public-key": {
                    "type": "string",
                    "description": "SKAdNetwork public key, base64 SPKI or PEM"
                  },
                  "previous-key-grace-seconds": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": 31536000
                  }
                }
              },
              "AdNetworkRegistration": {
                "type": "object",
                "properties": {
                  "ad-network-identifier": {
                    "type": "string"
                  },
                  "public-key": {
                    "type": "string"
                  },
                  "postback-url": {
                    "type": "string"
                  },
                  "previous-public-key": {
                    "type": "string"
                  },
                  "previous-key-valid-until": {
                    "type": "integer"
                  },
                  "skan-public-key": {
                    "type": "string"
                  }
                }
              },
              "PublisherAppRequest": {
                "type": "object",
                "required": [
                  "AdNetworkIdentifiers"
                ],
                "properties": {
                  "AdNetworkIdentifiers": {
                    "type": "array",
                    "items": {
                      "type": "string"
                    }
                  }
                }
              },
              "InstallWindows": {
                "type": "object",
                "required": [
                  "install"
                ],
                "properties": {
                  "install": {
                    "type": "object",
                    "properties": {
                      "click": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": 30
                      },
                      "view": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": 7
                      },
                      "ignoreInteractionType": {
                        "type": "string",
                        "enum": [
                          "click",
                          "view"
                        ]
                      }
                    }
                  }
                }
              },
              "AdvertisedAppRequest": {
                "type": "object",
                "description": "AdAttributionKit keys, flat or inside AdAttributionKitConfigurations",
                "properties": {
                  "AdAttributionKitConfigurations": {
                    "type": "object"
                  },
                  "AttributionWindows": {
                    "type": "object",
                    "description": "'global' and per-network entries",
                    "additionalProperties": {
                      "$ref": "#/components/schemas/InstallWindows"
                    }
                  },
                  "AttributionCooldown": {
                    "type": "object",
                    "properties": {
                      "install-cooldown-hours": {
                        "type": "integer",
                        "minimum": 0,
                        "maximum": 720
                      },
                      "re-engagement-cooldown-hours": {
                        "type": "integer",
                        "minimum": 0,
                        "maximum": 720
                      },
                      "reengagement-cooldown-hours": {
                        "type": "integer",
                        "minimum": 0,
                        "maximum": 720,
                        "description": "WWDC25's spelling of `re-engagement-cooldown-hours`: read as it, stored and echoed under that name; both at once must agree (400 `invalid-configuration` otherwise)"
                      }
                    }
                  },
                  "AttributionCopyEndpoint": {
                    "type": "string",
                    "description": "https URL; winning postbacks are copied to its host's registrable domain by the Public Suffix List (`ads.example.co.uk` → `example.co.uk`; `x.github.io` stays itself) at /.well-known/appattribution/report-attribution/. A public suffix alone (`github.io`) is 400 `invalid-copy-endpoint`"
                  },
                  "EligibleForAdAttributionKitReengagementPostbackCopies": {
                    "type": "boolean"
                  },
                  "EligibleForAdAttributionKitOverlappingConversions": {
                    "type": "boolean"
                  }
                }
              },
              "AppKey": {
                "type": "object",
                "properties": {
                  "app-key": {
                    "type": "string"
                  },
                  "advertised-item-identifier": {
                    "type": "string"
                  },
                  "key-identifier": {
                    "type": "string",
                    "description": "the first 12 hex digits of the key's SHA-256: names it in the list and to revoke it"
                  },
                  "issued-at": {
                    "type": "integer",
                    "description": "milliseconds since 1970"
                  }
                }
              },
              "AppKeys": {
                "type": "object",
                "properties": {
                  "advertised-item-identifier": {"type": "string"},
                  "keys": {"type": "array", "items": {"type": "object", "properties": {"key-identifier": {"type": "string"}, "issued-at": {"type": "integer", "description": "milliseconds since 1970; absent for keys issued before it was recorded"}}}}
                }
              },
              "Rejections": {
                "type": "object",
                "properties": {
                  "unsigned-rejections": {
                    "type": "array",
                    "description": "ad networks only: the last 100 refused impressions naming this network whose signature did not verify, newest first, each as in `rejections`",
                    "items": {"type": "object"}
                  },
                  "unsigned-refusals": {
                    "type": "integer",
                    "description": "ad networks only: how many refused impressions named this network without its signature"
                  },
                  "rejections": {
                    "type": "array",
                    "items": {
                      "type": "object",
                      "properties": {
                        "reason": {
                          "type": "string",
                          "description": "stable machine-readable code (ProblemReason)",
                          "enum": \#(reasons(in: .rejection))
                        },
                        "detail": {
                          "type": "string"
                        },
                        "event-identifier": {
                          "type": "string"
                        },
                        "ad-network-identifier": {
                          "type": "string"
                        },
                        "impression-identifier": {
                          "type": "string"
                        }
                      }
                    }
                  }
                }
              },
              "JWKSet": {
                "type": "object",
                "required": [
                  "keys"
                ],
                "properties": {
                  "keys": {
                    "type": "array",
                    "items": {
                      "type": "object"
                    }
                  }
                }
              }
            }
          }
        }
        """#
}
