// swift-format-ignore-file
// Written by scripts/embed_openapi.py from openapi.json beside this file; edit that, then run it.
extension OpenAPIDocument {
    /// The document as the file holds it, without its final newline.
    static let json = ##"""
{
  "openapi": "3.1.0",
  "info": {
    "title": "attribution-pipeline HTTP API (ingest and admin)",
    "version": "1.0.0",
    "description": "The HTTP API of two services. ingest: events in (impressions, conversions, conversion-value updates, activity), the pipeline's public keys, the OpenAPI document and the ad networks' own routes on its public listener (`HTTP_PORT`, default 8080), with `/metrics` and the detailed `/ready` on its operations listener (`OPERATIONS_HTTP_PORT`, default 8082). admin: the admin API and `/metrics` (`HTTP_PORT` of the `admin` service, default 8081); each such path names it in `servers`, and ingest answers those paths 404. `/health` and `/ready` are on every listener. Errors are RFC 9457 problem JSON with a stable `reason`. Any route that reads or writes Redis may answer 503 `redis-unreachable` with `Retry-After` while Redis is unavailable; a path served with other methods answers 405 `method-not-allowed` with `Allow`. Times are milliseconds since 1970."
  },
  "servers": [
    {
      "url": "http://{host}:{port}",
      "description": "the public listener",
      "variables": {
        "host": {
          "default": "127.0.0.1",
          "description": "HTTP_HOST"
        },
        "port": {
          "default": "8080",
          "description": "HTTP_PORT"
        }
      }
    }
  ],
  "tags": [
    {
      "name": "Events",
      "description": "Impressions, conversions, conversion-value updates and activity, one at a time or in batches (ingest's public listener; conversions, updates and activity with the advertised app's key)."
    },
    {
      "name": "Ad networks",
      "description": "An ad network's own registration, refusals and test postbacks, with its credential (ingest's public listener)."
    },
    {
      "name": "Discovery",
      "description": "The pipeline's postback-signing public keys (JWKS) and this document."
    },
    {
      "name": "Admin",
      "description": "The registry, keys and credentials, schemas, refusal lists, dead letters and device erasure (the admin service, with ADMIN_TOKEN)."
    },
    {
      "name": "Operations",
      "description": "Liveness, readiness and Prometheus metrics, on every listener as each path says."
    }
  ],
  "paths": {
    "/v1/impressions": {
      "post": {
        "operationId": "reportImpression",
        "tags": [
          "Events"
        ],
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
              },
              "examples": {
                "click": {
                  "summary": "A tap on an AdAttributionKit ad, loaded 4 s before",
                  "value": {
                    "device-identifier": "device-0001",
                    "impression": "eyJhbGciOiJFUzI1NiIsImtpZCI6ImV4YW1wbGUuYWRhdHRyaWJ1dGlvbmtpdCJ9.eyJpbXByZXNzaW9uLWlkZW50aWZpZXIiOiI4NUNDNkQ1QS04RjU5LTRBNUItQjA5Qi0wNTA2QkFCRUU4MUMiLCJhZC1uZXR3b3JrLWlkZW50aWZpZXIiOiJleGFtcGxlLmFkYXR0cmlidXRpb25raXQiLCJhZHZlcnRpc2VkLWl0ZW0taWRlbnRpZmllciI6MTEwODE4NzM5MCwicHVibGlzaGVyLWl0ZW0taWRlbnRpZmllciI6NTgzODQ5Miwic291cmNlLWlkZW50aWZpZXIiOjEyMzQsInRpbWVzdGFtcCI6MTc3MjQ0NTU5NTAwMCwiaW1wcmVzc2lvbi10eXBlIjoiYXBwLWltcHJlc3Npb24ifQ.O_vQaN7rBzXdrg293JwUZG-tBu8zd9XMSR9nlPcVJU0pT0PMK5z0TJfUcgFc6sWORaPCnx_5-nKVps1JpdKmmA",
                    "interaction": {
                      "type": "click",
                      "loaded-at": 1772445596000,
                      "time": 1772445600000
                    }
                  }
                },
                "view": {
                  "summary": "A view 3 s on screen (begin and end)",
                  "value": {
                    "device-identifier": "device-0002",
                    "impression": "eyJhbGciOiJFUzI1NiIsImtpZCI6ImV4YW1wbGUuYWRhdHRyaWJ1dGlvbmtpdCJ9.eyJpbXByZXNzaW9uLWlkZW50aWZpZXIiOiIyRTExNUVGNy1CNjQ0LTREMDMtQTk5RC03RjFCNUQ3MUE1QUEiLCJhZC1uZXR3b3JrLWlkZW50aWZpZXIiOiJleGFtcGxlLmFkYXR0cmlidXRpb25raXQiLCJhZHZlcnRpc2VkLWl0ZW0taWRlbnRpZmllciI6MTEwODE4NzM5MCwicHVibGlzaGVyLWl0ZW0taWRlbnRpZmllciI6NTgzODQ5Miwic291cmNlLWlkZW50aWZpZXIiOjEyMzQsInRpbWVzdGFtcCI6MTc3MjQ0NTU5NTAwMCwiaW1wcmVzc2lvbi10eXBlIjoiYXBwLWltcHJlc3Npb24ifQ.krN_fote_Ltg0hpC8zD9hDa2MWjrTUJyZRYtXUzNEKAbaMfRXynLM4jHdro_jjvYW1JEuvYen2tT31ijgIKHSQ",
                    "interaction": {
                      "type": "view",
                      "begin": 1772445597000,
                      "time": 1772445600000
                    }
                  }
                },
                "one-call-view": {
                  "summary": "A view recorded in one call (handleView()), of an impression that may drive a re-engagement",
                  "value": {
                    "device-identifier": "device-0003",
                    "impression": "eyJhbGciOiJFUzI1NiIsImtpZCI6ImV4YW1wbGUuYWRhdHRyaWJ1dGlvbmtpdCJ9.eyJpbXByZXNzaW9uLWlkZW50aWZpZXIiOiI5NTNCMUZBNC04NEU2LTRBMUMtQjRBMi05NTc1NTkzNzEzQTYiLCJhZC1uZXR3b3JrLWlkZW50aWZpZXIiOiJleGFtcGxlLmFkYXR0cmlidXRpb25raXQiLCJhZHZlcnRpc2VkLWl0ZW0taWRlbnRpZmllciI6MTEwODE4NzM5MCwicHVibGlzaGVyLWl0ZW0taWRlbnRpZmllciI6NTgzODQ5Miwic291cmNlLWlkZW50aWZpZXIiOjEyMzQsInRpbWVzdGFtcCI6MTc3MjQ0NTU5NTAwMCwiaW1wcmVzc2lvbi10eXBlIjoiYXBwLWltcHJlc3Npb24iLCJlbGlnaWJsZS1mb3ItcmUtZW5nYWdlbWVudCI6dHJ1ZX0.Kp4eYT-CU8Xn_YkNZ3EGMtVwSfHL8avV5YcgzSU4YoIxjU7UgM0GqMSVYQ7oTOhDHhsLE1RULGiTpqTciIKoBQ",
                    "interaction": {
                      "type": "view",
                      "time": 1772445600000
                    }
                  }
                },
                "skadnetwork": {
                  "summary": "A StoreKit-rendered SKAdNetwork 4.0 impression (fidelity 1: a click)",
                  "value": {
                    "device-identifier": "device-0004",
                    "skadnetwork-impression": {
                      "version": "4.0",
                      "ad-network-id": "example.adattributionkit",
                      "source-identifier": 1234,
                      "itunes-item-id": 1108187390,
                      "nonce": "9c1c10b4-7526-4491-9f69-0e1b4e8a38dc",
                      "source-app-id": 5838492,
                      "fidelity-type": 1,
                      "timestamp": 1772445595000,
                      "signature": "MEYCIQCuUH32q8pARs3mYjR4CwMUl9Mv6JObeDMyYBCT4gKGAwIhALrGC8JaxKFjKKQqHp1wT1qLC8JHgr02JEyqnb3ACKen"
                    },
                    "interaction": {
                      "type": "click",
                      "loaded-at": 1772445596000,
                      "time": 1772445600000
                    }
                  }
                }
              }
            }
          }
        },
        "responses": {
          "503": {
            "description": "not acknowledged; retry after `Retry-After` seconds with the same `Idempotency-Key`. `overloaded` (ingest at capacity: `INGEST_MAX_IN_FLIGHT`, `INGEST_QUEUE_TARGET_MS`) and `pipeline-lagging` (the verifier past `INGEST_MAX_EVENTS_LAG` behind) are answered at once and wrote nothing; `redis-unreachable` (Redis unavailable) and `replication-timeout` (written, not yet on a replica) may have written it",
            "headers": {
              "Retry-After": {
                "schema": {
                  "type": "integer"
                }
              }
            },
            "content": {
              "application/problem+json": {
                "schema": {
                  "$ref": "#/components/schemas/Problem"
                },
                "examples": {
                  "overloaded": {
                    "summary": "ingest is at capacity; nothing was written",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/overloaded",
                      "title": "Service Unavailable",
                      "status": 503,
                      "detail": "ingest is at capacity (writes are waiting 212 ms for Redis); nothing was written, retry later",
                      "reason": "overloaded"
                    }
                  },
                  "pipeline-lagging": {
                    "summary": "the verifier is too far behind; nothing was written",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/pipeline-lagging",
                      "title": "Service Unavailable",
                      "status": 503,
                      "detail": "the pipeline is 200417 events behind (ceiling 200000); nothing was written, retry later",
                      "reason": "pipeline-lagging"
                    }
                  },
                  "redis-unreachable": {
                    "summary": "Redis is unavailable: it may be written, retry with the same Idempotency-Key",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/redis-unreachable",
                      "title": "Service Unavailable",
                      "status": 503,
                      "detail": "Redis is unavailable; retry after Retry-After (an event with the same Idempotency-Key: it may be written)",
                      "reason": "redis-unreachable"
                    }
                  },
                  "replication-timeout": {
                    "summary": "written, but no replica confirmed it in time: retry with the same Idempotency-Key",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/replication-timeout",
                      "title": "Service Unavailable",
                      "status": 503,
                      "detail": "the event is written but 0 of 1 replicas confirmed it within 1000 ms; retry with the same Idempotency-Key",
                      "reason": "replication-timeout",
                      "event-identifier": "a5fa2b31-e248-4ebe-a7e1-f8f34c432156"
                    }
                  }
                }
              }
            }
          },
          "429": {
            "description": "`rate-limited`: this caller (ad network or app) is past `INGEST_CALLER_RATE`; nothing was written, retry after `Retry-After` seconds",
            "headers": {
              "Retry-After": {
                "schema": {
                  "type": "integer"
                }
              }
            },
            "content": {
              "application/problem+json": {
                "schema": {
                  "$ref": "#/components/schemas/Problem"
                },
                "examples": {
                  "rate-limited": {
                    "summary": "this caller is past INGEST_CALLER_RATE; nothing was written",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/rate-limited",
                      "title": "Too Many Requests",
                      "status": 429,
                      "detail": "network example.adattributionkit is past its 500 events/s; nothing of this was written, retry after Retry-After seconds",
                      "reason": "rate-limited"
                    }
                  }
                }
              }
            }
          },
          "202": {
            "description": "accepted: the event is in the pipeline",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Accepted"
                },
                "examples": {
                  "click": {
                    "summary": "accepted",
                    "value": {
                      "event-identifier": "4976274c-53aa-4441-9e08-7647b3bd7365"
                    }
                  },
                  "view": {
                    "summary": "accepted",
                    "value": {
                      "event-identifier": "13632dd5-4203-4f50-aca4-66527748e036"
                    }
                  },
                  "one-call-view": {
                    "summary": "accepted",
                    "value": {
                      "event-identifier": "17234b1d-ccc5-4b49-93e0-d880ed4ed22b"
                    }
                  },
                  "skadnetwork": {
                    "summary": "accepted",
                    "value": {
                      "event-identifier": "dfd03a1d-95c0-42b3-b967-046cd7a17d5f"
                    }
                  }
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
        "operationId": "reportConversion",
        "tags": [
          "Events"
        ],
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
          },
          {
            "name": "Prefer",
            "in": "header",
            "required": false,
            "schema": {
              "type": "string",
              "pattern": "^wait=[0-9]+$"
            },
            "description": "re-engagements: `wait=N` (RFC 7240) holds the 202 up to N seconds (at most 10) for attribution's decision, given as `conversion` (and `reason`); the answer carries `Preference-Applied: wait=N`. A conversion settles `CONVERSION_SETTLE_MS` (2 s by default) before it is decided: wait longer than that. Other preferences are ignored"
          }
        ],
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/ConversionRequest"
              },
              "examples": {
                "download": {
                  "summary": "An install from the App Store",
                  "value": {
                    "device-identifier": "device-0001",
                    "advertised-item-identifier": 1108187390,
                    "conversion-type": "download",
                    "time": 1772449200000,
                    "country-code": "US"
                  }
                },
                "redownload": {
                  "summary": "A redownload from an alternative marketplace",
                  "value": {
                    "device-identifier": "device-0002",
                    "advertised-item-identifier": 1108187390,
                    "conversion-type": "redownload",
                    "time": 1772449200000,
                    "country-code": "FR",
                    "marketplace-identifier": "com.example.store"
                  }
                },
                "re-engagement": {
                  "summary": "A re-engagement that opens the ad's universal link: its answer carries the conversion-tag its updates and activity name, and the link to open",
                  "value": {
                    "device-identifier": "device-0003",
                    "advertised-item-identifier": 1108187390,
                    "conversion-type": "re-engagement",
                    "time": 1772449200000,
                    "reengagement-url": "https://app.example.com/offer?ref=spring"
                  }
                }
              }
            }
          }
        },
        "responses": {
          "503": {
            "description": "not acknowledged; retry after `Retry-After` seconds with the same `Idempotency-Key`. `overloaded` (ingest at capacity: `INGEST_MAX_IN_FLIGHT`, `INGEST_QUEUE_TARGET_MS`) and `pipeline-lagging` (the verifier past `INGEST_MAX_EVENTS_LAG` behind) are answered at once and wrote nothing; `redis-unreachable` (Redis unavailable) and `replication-timeout` (written, not yet on a replica) may have written it",
            "headers": {
              "Retry-After": {
                "schema": {
                  "type": "integer"
                }
              }
            },
            "content": {
              "application/problem+json": {
                "schema": {
                  "$ref": "#/components/schemas/Problem"
                },
                "examples": {
                  "overloaded": {
                    "summary": "ingest is at capacity; nothing was written",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/overloaded",
                      "title": "Service Unavailable",
                      "status": 503,
                      "detail": "ingest is at capacity (writes are waiting 212 ms for Redis); nothing was written, retry later",
                      "reason": "overloaded"
                    }
                  },
                  "pipeline-lagging": {
                    "summary": "the verifier is too far behind; nothing was written",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/pipeline-lagging",
                      "title": "Service Unavailable",
                      "status": 503,
                      "detail": "the pipeline is 200417 events behind (ceiling 200000); nothing was written, retry later",
                      "reason": "pipeline-lagging"
                    }
                  },
                  "redis-unreachable": {
                    "summary": "Redis is unavailable: it may be written, retry with the same Idempotency-Key",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/redis-unreachable",
                      "title": "Service Unavailable",
                      "status": 503,
                      "detail": "Redis is unavailable; retry after Retry-After (an event with the same Idempotency-Key: it may be written)",
                      "reason": "redis-unreachable"
                    }
                  },
                  "replication-timeout": {
                    "summary": "written, but no replica confirmed it in time: retry with the same Idempotency-Key",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/replication-timeout",
                      "title": "Service Unavailable",
                      "status": 503,
                      "detail": "the event is written but 0 of 1 replicas confirmed it within 1000 ms; retry with the same Idempotency-Key",
                      "reason": "replication-timeout",
                      "event-identifier": "c4826629-dffd-4dc5-a416-0a1ef014e6c3"
                    }
                  }
                }
              }
            }
          },
          "429": {
            "description": "`rate-limited`: this caller (ad network or app) is past `INGEST_CALLER_RATE`; nothing was written, retry after `Retry-After` seconds",
            "headers": {
              "Retry-After": {
                "schema": {
                  "type": "integer"
                }
              }
            },
            "content": {
              "application/problem+json": {
                "schema": {
                  "$ref": "#/components/schemas/Problem"
                },
                "examples": {
                  "rate-limited": {
                    "summary": "this caller is past INGEST_CALLER_RATE; nothing was written",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/rate-limited",
                      "title": "Too Many Requests",
                      "status": 429,
                      "detail": "app 1108187390 is past its 500 events/s; nothing of this was written, retry after Retry-After seconds",
                      "reason": "rate-limited"
                    }
                  }
                }
              }
            }
          },
          "202": {
            "description": "accepted",
            "headers": {
              "Preference-Applied": {
                "schema": {
                  "type": "string"
                },
                "description": "`wait=N` when the request asked to wait"
              }
            },
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Accepted"
                },
                "examples": {
                  "download": {
                    "summary": "accepted",
                    "value": {
                      "event-identifier": "117fbe90-aada-4462-a63e-5bf5f8fbaa87"
                    }
                  },
                  "redownload": {
                    "summary": "accepted",
                    "value": {
                      "event-identifier": "583d80a4-e823-4c0a-9245-1d5f965c1830"
                    }
                  },
                  "re-engagement": {
                    "summary": "accepted, with the tag (the AdAttributionKitReengagementOpen value) and the URL to open, whether or not a conversion is created",
                    "value": {
                      "conversion-tag": "edffbb15-2c70-49c9-883d-c2133e51f3c1",
                      "event-identifier": "edffbb15-2c70-49c9-883d-c2133e51f3c1",
                      "open-url": "https://app.example.com/offer?ref=spring&AdAttributionKitReengagementOpen=edffbb15-2c70-49c9-883d-c2133e51f3c1"
                    }
                  }
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
        "operationId": "reportValueUpdate",
        "tags": [
          "Events"
        ],
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
              },
              "examples": {
                "adattributionkit": {
                  "summary": "AdAttributionKit's PostbackUpdate for the install",
                  "value": {
                    "device-identifier": "device-0001",
                    "advertised-item-identifier": 1108187390,
                    "time": 1772452800000,
                    "fineConversionValue": 42,
                    "coarseConversionValue": "high",
                    "lockPostback": false,
                    "conversionTypes": [
                      "install"
                    ]
                  }
                },
                "re-engagement": {
                  "summary": "An update of the re-engagement its conversionTag names",
                  "value": {
                    "device-identifier": "device-0003",
                    "advertised-item-identifier": 1108187390,
                    "time": 1772452800000,
                    "fineConversionValue": 12,
                    "coarseConversionValue": "medium",
                    "conversionTypes": [
                      "reengagement"
                    ],
                    "conversionTag": "edffbb15-2c70-49c9-883d-c2133e51f3c1"
                  }
                },
                "skadnetwork": {
                  "summary": "SKAdNetwork's updatePostbackConversionValue(_:coarseValue:lockWindow:)",
                  "value": {
                    "device-identifier": "device-0004",
                    "advertised-item-identifier": 1108187390,
                    "time": 1772452800000,
                    "fineValue": 20,
                    "coarseValue": "medium",
                    "lockWindow": false
                  }
                }
              }
            }
          }
        },
        "responses": {
          "503": {
            "description": "not acknowledged; retry after `Retry-After` seconds with the same `Idempotency-Key`. `overloaded` (ingest at capacity: `INGEST_MAX_IN_FLIGHT`, `INGEST_QUEUE_TARGET_MS`) and `pipeline-lagging` (the verifier past `INGEST_MAX_EVENTS_LAG` behind) are answered at once and wrote nothing; `redis-unreachable` (Redis unavailable) and `replication-timeout` (written, not yet on a replica) may have written it",
            "headers": {
              "Retry-After": {
                "schema": {
                  "type": "integer"
                }
              }
            },
            "content": {
              "application/problem+json": {
                "schema": {
                  "$ref": "#/components/schemas/Problem"
                },
                "examples": {
                  "overloaded": {
                    "summary": "ingest is at capacity; nothing was written",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/overloaded",
                      "title": "Service Unavailable",
                      "status": 503,
                      "detail": "ingest is at capacity (writes are waiting 212 ms for Redis); nothing was written, retry later",
                      "reason": "overloaded"
                    }
                  },
                  "pipeline-lagging": {
                    "summary": "the verifier is too far behind; nothing was written",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/pipeline-lagging",
                      "title": "Service Unavailable",
                      "status": 503,
                      "detail": "the pipeline is 200417 events behind (ceiling 200000); nothing was written, retry later",
                      "reason": "pipeline-lagging"
                    }
                  },
                  "redis-unreachable": {
                    "summary": "Redis is unavailable: it may be written, retry with the same Idempotency-Key",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/redis-unreachable",
                      "title": "Service Unavailable",
                      "status": 503,
                      "detail": "Redis is unavailable; retry after Retry-After (an event with the same Idempotency-Key: it may be written)",
                      "reason": "redis-unreachable"
                    }
                  },
                  "replication-timeout": {
                    "summary": "written, but no replica confirmed it in time: retry with the same Idempotency-Key",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/replication-timeout",
                      "title": "Service Unavailable",
                      "status": 503,
                      "detail": "the event is written but 0 of 1 replicas confirmed it within 1000 ms; retry with the same Idempotency-Key",
                      "reason": "replication-timeout",
                      "event-identifier": "a9952fd3-ba61-492c-99a1-a27e564bae87"
                    }
                  }
                }
              }
            }
          },
          "429": {
            "description": "`rate-limited`: this caller (ad network or app) is past `INGEST_CALLER_RATE`; nothing was written, retry after `Retry-After` seconds",
            "headers": {
              "Retry-After": {
                "schema": {
                  "type": "integer"
                }
              }
            },
            "content": {
              "application/problem+json": {
                "schema": {
                  "$ref": "#/components/schemas/Problem"
                },
                "examples": {
                  "rate-limited": {
                    "summary": "this caller is past INGEST_CALLER_RATE; nothing was written",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/rate-limited",
                      "title": "Too Many Requests",
                      "status": 429,
                      "detail": "app 1108187390 is past its 500 events/s; nothing of this was written, retry after Retry-After seconds",
                      "reason": "rate-limited"
                    }
                  }
                }
              }
            }
          },
          "202": {
            "description": "accepted",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Accepted"
                },
                "examples": {
                  "adattributionkit": {
                    "summary": "accepted",
                    "value": {
                      "event-identifier": "9a3b4a6b-4ad1-4f9b-8333-8cb6718efa7d"
                    }
                  },
                  "re-engagement": {
                    "summary": "accepted",
                    "value": {
                      "event-identifier": "bd8b783f-ed6c-4699-bc59-d3dfca638f9d"
                    }
                  },
                  "skadnetwork": {
                    "summary": "accepted",
                    "value": {
                      "event-identifier": "81494aae-93df-473a-9498-c1696cfdf9b4"
                    }
                  }
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
      "servers": [
        {
          "url": "http://{host}:{port}",
          "description": "the admin service (`admin`): the admin API, /metrics, and /ready with details",
          "variables": {
            "host": {
              "default": "127.0.0.1",
              "description": "admin's HTTP_HOST"
            },
            "port": {
              "default": "8081",
              "description": "admin's HTTP_PORT"
            }
          }
        }
      ],
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
        "operationId": "deleteAdNetwork",
        "tags": [
          "Admin"
        ],
        "summary": "Delete the ad network: its registration, read-only credentials and refusal lists. Its impressions not yet verified are then refused (`unknown-ad-network`, listed nowhere); verified impressions stay in devices' pools and can still win; its postbacks, when due (and retries of ones already tried), are dead-lettered with `ad network … is not registered` and delivered by a replay once it is registered again (to its postback URL then)",
        "security": [
          {
            "adminToken": []
          }
        ],
        "responses": {
          "200": {
            "description": "deleted",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "properties": {
                    "ad-network-identifier": {
                      "type": "string"
                    },
                    "deleted": {
                      "type": "boolean"
                    }
                  }
                },
                "examples": {
                  "deleted": {
                    "summary": "deleted",
                    "value": {
                      "ad-network-identifier": "example.adattributionkit",
                      "deleted": true
                    }
                  }
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
            "description": "not registered (`unknown-ad-network`)",
            "content": {
              "application/problem+json": {
                "schema": {
                  "$ref": "#/components/schemas/Problem"
                },
                "examples": {
                  "unknown-ad-network": {
                    "summary": "not registered",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/unknown-ad-network",
                      "title": "Not Found",
                      "status": 404,
                      "detail": "ad network example.adattributionkit is not registered",
                      "reason": "unknown-ad-network"
                    }
                  }
                }
              }
            }
          }
        }
      },
      "put": {
        "operationId": "putAdNetwork",
        "tags": [
          "Admin"
        ],
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
              },
              "examples": {
                "registered": {
                  "summary": "A first registration: the ES256 public key (PEM) and the postback URL",
                  "value": {
                    "public-key": "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEzOntur9x5pRIg1pDtg1nkUZHPMnV\nFAUZrF2HIMKGc+VwNBd7EoOUWLbAP37lqE+RObIQ8fBOCRtPaLcKt512Lw==\n-----END PUBLIC KEY-----\n",
                    "postback-url": "https://postbacks.example.com/adattributionkit"
                  }
                },
                "rotated": {
                  "summary": "A new key (the previous one verifies impressions 72 h more) and a SKAdNetwork key",
                  "value": {
                    "public-key": "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEk96953Co2oXs1a6V7fhX1y47kJnv\nY83FxuHoLXacMotJDZyzNB2D+f6gXWIbXjHf1AevQGpfWKLxCcQ0d/Mjsg==\n-----END PUBLIC KEY-----\n",
                    "postback-url": "https://postbacks.example.com/adattributionkit",
                    "skan-public-key": "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEr4Uw1+XuHSzSDeBU8d1LHDcR6ae0wid4fjUQGO0yh/mmPUxLD82rw7hR3NOEjQnYejwhal0vv9i/JTqoKRNsHw==",
                    "previous-key-grace-seconds": 259200
                  }
                }
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
                },
                "examples": {
                  "registered": {
                    "summary": "stored: the key as a JWK",
                    "value": {
                      "ad-network-identifier": "example.adattributionkit",
                      "postback-url": "https://postbacks.example.com/adattributionkit",
                      "public-key": "{\"alg\":\"ES256\",\"crv\":\"P-256\",\"kid\":\"example.adattributionkit\",\"kty\":\"EC\",\"use\":\"sig\",\"x\":\"zOntur9x5pRIg1pDtg1nkUZHPMnVFAUZrF2HIMKGc-U\",\"y\":\"cDQXexKDlFi2wD9-5ahPkTmyEPHwTgkbT2i3Creddi8\"}"
                    }
                  },
                  "rotated": {
                    "summary": "stored, with the previous key until its grace ends",
                    "value": {
                      "ad-network-identifier": "example.adattributionkit",
                      "postback-url": "https://postbacks.example.com/adattributionkit",
                      "previous-key-valid-until": 1772704800000,
                      "previous-public-key": "{\"alg\":\"ES256\",\"crv\":\"P-256\",\"kid\":\"example.adattributionkit\",\"kty\":\"EC\",\"use\":\"sig\",\"x\":\"zOntur9x5pRIg1pDtg1nkUZHPMnVFAUZrF2HIMKGc-U\",\"y\":\"cDQXexKDlFi2wD9-5ahPkTmyEPHwTgkbT2i3Creddi8\"}",
                      "public-key": "{\"alg\":\"ES256\",\"crv\":\"P-256\",\"kid\":\"example.adattributionkit\",\"kty\":\"EC\",\"use\":\"sig\",\"x\":\"k96953Co2oXs1a6V7fhX1y47kJnvY83FxuHoLXacMos\",\"y\":\"SQ2cszQdg_n-oF1iG14x39QHr0BqX1ii8QnENHfzI7I\"}",
                      "skan-public-key": "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEr4Uw1+XuHSzSDeBU8d1LHDcR6ae0wid4fjUQGO0yh/mmPUxLD82rw7hR3NOEjQnYejwhal0vv9i/JTqoKRNsHw=="
                    }
                  }
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
        "operationId": "getAdNetwork",
        "tags": [
          "Admin"
        ],
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
                },
                "examples": {
                  "registration": {
                    "summary": "the registration after a key rotation",
                    "value": {
                      "ad-network-identifier": "example.adattributionkit",
                      "postback-url": "https://postbacks.example.com/adattributionkit",
                      "previous-key-valid-until": 1772704800000,
                      "previous-public-key": "{\"alg\":\"ES256\",\"crv\":\"P-256\",\"kid\":\"example.adattributionkit\",\"kty\":\"EC\",\"use\":\"sig\",\"x\":\"zOntur9x5pRIg1pDtg1nkUZHPMnVFAUZrF2HIMKGc-U\",\"y\":\"cDQXexKDlFi2wD9-5ahPkTmyEPHwTgkbT2i3Creddi8\"}",
                      "public-key": "{\"alg\":\"ES256\",\"crv\":\"P-256\",\"kid\":\"example.adattributionkit\",\"kty\":\"EC\",\"use\":\"sig\",\"x\":\"k96953Co2oXs1a6V7fhX1y47kJnvY83FxuHoLXacMos\",\"y\":\"SQ2cszQdg_n-oF1iG14x39QHr0BqX1ii8QnENHfzI7I\"}",
                      "skan-public-key": "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEr4Uw1+XuHSzSDeBU8d1LHDcR6ae0wid4fjUQGO0yh/mmPUxLD82rw7hR3NOEjQnYejwhal0vv9i/JTqoKRNsHw=="
                    }
                  }
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
      "servers": [
        {
          "url": "http://{host}:{port}",
          "description": "the admin service (`admin`): the admin API, /metrics, and /ready with details",
          "variables": {
            "host": {
              "default": "127.0.0.1",
              "description": "admin's HTTP_HOST"
            },
            "port": {
              "default": "8081",
              "description": "admin's HTTP_PORT"
            }
          }
        }
      ],
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
        "operationId": "listAdNetworkRejections",
        "tags": [
          "Admin"
        ],
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
                },
                "examples": {
                  "rejections": {
                    "summary": "two refusals, and one impression that only named the network",
                    "value": {
                      "rejections": [
                        {
                          "ad-network-identifier": "example.adattributionkit",
                          "detail": "a view counts only after 2 s on screen",
                          "event-identifier": "fdecfb67-abc0-4b86-b3e3-d44d65a82a85",
                          "impression-identifier": "50EFD619-EFF7-4908-AF57-0E4518A7533B",
                          "reason": "view-too-short"
                        },
                        {
                          "ad-network-identifier": "example.adattributionkit",
                          "detail": "this impression-identifier was already used",
                          "event-identifier": "faa1c8ea-f970-41b8-b90a-ef3064174bc8",
                          "impression-identifier": "85CC6D5A-8F59-4A5B-B09B-0506BABEE81C",
                          "reason": "impression-replayed"
                        }
                      ],
                      "unsigned-rejections": [
                        {
                          "ad-network-identifier": "example.adattributionkit",
                          "detail": "signature does not verify with the key",
                          "event-identifier": "195a13df-086d-4bcb-8ad6-0791011f344d",
                          "impression-identifier": "2531A811-2F2B-42B5-8CF2-7CD90EFF0EA3",
                          "reason": "invalid-signature"
                        }
                      ],
                      "unsigned-refusals": 1
                    }
                  }
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
      "servers": [
        {
          "url": "http://{host}:{port}",
          "description": "the admin service (`admin`): the admin API, /metrics, and /ready with details",
          "variables": {
            "host": {
              "default": "127.0.0.1",
              "description": "admin's HTTP_HOST"
            },
            "port": {
              "default": "8081",
              "description": "admin's HTTP_PORT"
            }
          }
        }
      ],
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
        "operationId": "getPublisherApp",
        "tags": [
          "Admin"
        ],
        "summary": "The publisher app as stored (its AdNetworkIdentifiers, each once)",
        "security": [
          {
            "adminToken": []
          }
        ],
        "responses": {
          "200": {
            "description": "the registration, as the PUT answered it",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object"
                },
                "examples": {
                  "registration": {
                    "summary": "as stored",
                    "value": {
                      "AdNetworkIdentifiers": [
                        "example.adattributionkit",
                        "partner.adattributionkit"
                      ],
                      "item-identifier": 5838492
                    }
                  }
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
            "description": "not registered (`unknown-publisher-app`)",
            "content": {
              "application/problem+json": {
                "schema": {
                  "$ref": "#/components/schemas/Problem"
                },
                "examples": {
                  "unknown-publisher-app": {
                    "summary": "not registered",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/unknown-publisher-app",
                      "title": "Not Found",
                      "status": 404,
                      "detail": "publisher app 5838492 is not registered",
                      "reason": "unknown-publisher-app"
                    }
                  }
                }
              }
            }
          }
        }
      },
      "delete": {
        "operationId": "deletePublisherApp",
        "tags": [
          "Admin"
        ],
        "summary": "Delete the publisher app. Impressions naming it not yet verified are then refused (`publisher-not-listing-network`: a deleted app lists no network); verified ones stay eligible",
        "security": [
          {
            "adminToken": []
          }
        ],
        "responses": {
          "200": {
            "description": "deleted",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "properties": {
                    "item-identifier": {
                      "type": "string"
                    },
                    "deleted": {
                      "type": "boolean"
                    }
                  }
                },
                "examples": {
                  "deleted": {
                    "summary": "deleted",
                    "value": {
                      "deleted": true,
                      "item-identifier": "5838492"
                    }
                  }
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
            "description": "not registered (`unknown-publisher-app`)",
            "content": {
              "application/problem+json": {
                "schema": {
                  "$ref": "#/components/schemas/Problem"
                },
                "examples": {
                  "unknown-publisher-app": {
                    "summary": "not registered",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/unknown-publisher-app",
                      "title": "Not Found",
                      "status": 404,
                      "detail": "publisher app 5838492 is not registered",
                      "reason": "unknown-publisher-app"
                    }
                  }
                }
              }
            }
          }
        }
      },
      "put": {
        "operationId": "putPublisherApp",
        "tags": [
          "Admin"
        ],
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
              },
              "examples": {
                "networks": {
                  "summary": "The ad networks that may show ads in the app",
                  "value": {
                    "AdNetworkIdentifiers": [
                      "example.adattributionkit",
                      "partner.adattributionkit"
                    ]
                  }
                }
              }
            }
          }
        },
        "responses": {
          "200": {
            "description": "stored: the registration as stored (each network id once)",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object"
                },
                "examples": {
                  "networks": {
                    "summary": "stored",
                    "value": {
                      "AdNetworkIdentifiers": [
                        "example.adattributionkit",
                        "partner.adattributionkit"
                      ],
                      "item-identifier": 5838492
                    }
                  }
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
      }
    },
    "/v1/admin/advertised-apps/{item}": {
      "servers": [
        {
          "url": "http://{host}:{port}",
          "description": "the admin service (`admin`): the admin API, /metrics, and /ready with details",
          "variables": {
            "host": {
              "default": "127.0.0.1",
              "description": "admin's HTTP_HOST"
            },
            "port": {
              "default": "8081",
              "description": "admin's HTTP_PORT"
            }
          }
        }
      ],
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
        "operationId": "getAdvertisedApp",
        "tags": [
          "Admin"
        ],
        "summary": "The advertised app's configuration as stored (without the keys the PUT listed under `ignored`)",
        "security": [
          {
            "adminToken": []
          }
        ],
        "responses": {
          "200": {
            "description": "the configuration as stored, as a PUT body (without `ignored` and the item id): it can be edited and sent back",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object"
                },
                "examples": {
                  "configuration": {
                    "summary": "as stored: a PUT body",
                    "value": {
                      "AttributionCooldown": {
                        "install-cooldown-hours": 24,
                        "re-engagement-cooldown-hours": 48
                      },
                      "AttributionCopyEndpoint": "https://adattribution.example.com",
                      "AttributionWindows": {
                        "example.adattributionkit": {
                          "install": {
                            "click": 7,
                            "ignoreInteractionType": "view",
                            "view": 1
                          }
                        },
                        "global": {
                          "install": {
                            "click": 30,
                            "view": 1
                          }
                        }
                      },
                      "EligibleForAdAttributionKitReengagementPostbackCopies": true
                    }
                  }
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
            "description": "not registered (`unknown-advertised-app`)",
            "content": {
              "application/problem+json": {
                "schema": {
                  "$ref": "#/components/schemas/Problem"
                },
                "examples": {
                  "unknown-advertised-app": {
                    "summary": "not registered",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/unknown-advertised-app",
                      "title": "Not Found",
                      "status": 404,
                      "detail": "advertised app 1108187390 is not registered",
                      "reason": "unknown-advertised-app"
                    }
                  }
                }
              }
            }
          }
        }
      },
      "delete": {
        "operationId": "deleteAdvertisedApp",
        "tags": [
          "Admin"
        ],
        "summary": "Delete the advertised app: its configuration, every app key (refused from then on, within 10 s on every ingest replica), every version of its conversion-value schema (a new registration starts at version 1) and its refusal list. Its conversions, updates and activity not yet verified are then refused (`unknown-advertised-app`); conversions already verified keep their attribution and their postbacks to the ad networks; copies to its `AttributionCopyEndpoint` stop (due ones are not made; retries are dead-lettered)",
        "security": [
          {
            "adminToken": []
          }
        ],
        "responses": {
          "200": {
            "description": "deleted",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "properties": {
                    "advertised-item-identifier": {
                      "type": "string"
                    },
                    "deleted": {
                      "type": "boolean"
                    }
                  }
                },
                "examples": {
                  "deleted": {
                    "summary": "deleted",
                    "value": {
                      "advertised-item-identifier": "1108187390",
                      "deleted": true
                    }
                  }
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
            "description": "not registered (`unknown-advertised-app`)",
            "content": {
              "application/problem+json": {
                "schema": {
                  "$ref": "#/components/schemas/Problem"
                },
                "examples": {
                  "unknown-advertised-app": {
                    "summary": "not registered",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/unknown-advertised-app",
                      "title": "Not Found",
                      "status": 404,
                      "detail": "advertised app 1108187390 is not registered",
                      "reason": "unknown-advertised-app"
                    }
                  }
                }
              }
            }
          }
        }
      },
      "put": {
        "operationId": "putAdvertisedApp",
        "tags": [
          "Admin"
        ],
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
              },
              "examples": {
                "configured": {
                  "summary": "Windows (global and one network's), cooldowns, copies",
                  "value": {
                    "AttributionCooldown": {
                      "install-cooldown-hours": 24,
                      "re-engagement-cooldown-hours": 48
                    },
                    "AttributionCopyEndpoint": "https://adattribution.example.com",
                    "AttributionWindows": {
                      "example.adattributionkit": {
                        "install": {
                          "click": 7,
                          "ignoreInteractionType": "view",
                          "view": 1
                        }
                      },
                      "global": {
                        "install": {
                          "click": 30,
                          "view": 1
                        }
                      }
                    },
                    "EligibleForAdAttributionKitReengagementPostbackCopies": true
                  }
                },
                "ignored": {
                  "summary": "ignoreInteractionType in global: accepted, not stored, and said so",
                  "value": {
                    "AttributionWindows": {
                      "global": {
                        "install": {
                          "click": 30,
                          "ignoreInteractionType": "view"
                        }
                      }
                    }
                  }
                }
              }
            },
            "application/x-plist": {
              "schema": {
                "type": "string"
              },
              "examples": {
                "info-plist": {
                  "summary": "The app's Info.plist: Apple's AdAttributionKit dictionary is read, other keys passed over",
                  "value": "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n<plist version=\"1.0\">\n<dict>\n\t<key>CFBundleIdentifier</key>\n\t<string>com.example.game</string>\n\t<key>AdAttributionKit</key>\n\t<dict>\n\t\t<key>AttributionCopyEndpoint</key>\n\t\t<string>https://adattribution.example.com</string>\n\t\t<key>OptInForReengagementPostbackCopies</key>\n\t\t<true/>\n\t\t<key>AttributionWindows</key>\n\t\t<dict>\n\t\t\t<key>global</key>\n\t\t\t<dict>\n\t\t\t\t<key>install</key>\n\t\t\t\t<dict>\n\t\t\t\t\t<key>click</key>\n\t\t\t\t\t<integer>30</integer>\n\t\t\t\t\t<key>view</key>\n\t\t\t\t\t<integer>1</integer>\n\t\t\t\t</dict>\n\t\t\t</dict>\n\t\t</dict>\n\t\t<key>AttributionCooldown</key>\n\t\t<dict>\n\t\t\t<key>install-cooldown-hours</key>\n\t\t\t<integer>24</integer>\n\t\t\t<key>re-engagement-cooldown-hours</key>\n\t\t\t<integer>48</integer>\n\t\t</dict>\n\t</dict>\n</dict>\n</plist>\n"
                }
              }
            },
            "application/xml": {
              "schema": {
                "type": "string"
              },
              "examples": {
                "info-plist": {
                  "summary": "The app's Info.plist: Apple's AdAttributionKit dictionary is read, other keys passed over",
                  "value": "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n<plist version=\"1.0\">\n<dict>\n\t<key>CFBundleIdentifier</key>\n\t<string>com.example.game</string>\n\t<key>AdAttributionKit</key>\n\t<dict>\n\t\t<key>AttributionCopyEndpoint</key>\n\t\t<string>https://adattribution.example.com</string>\n\t\t<key>OptInForReengagementPostbackCopies</key>\n\t\t<true/>\n\t\t<key>AttributionWindows</key>\n\t\t<dict>\n\t\t\t<key>global</key>\n\t\t\t<dict>\n\t\t\t\t<key>install</key>\n\t\t\t\t<dict>\n\t\t\t\t\t<key>click</key>\n\t\t\t\t\t<integer>30</integer>\n\t\t\t\t\t<key>view</key>\n\t\t\t\t\t<integer>1</integer>\n\t\t\t\t</dict>\n\t\t\t</dict>\n\t\t</dict>\n\t\t<key>AttributionCooldown</key>\n\t\t<dict>\n\t\t\t<key>install-cooldown-hours</key>\n\t\t\t<integer>24</integer>\n\t\t\t<key>re-engagement-cooldown-hours</key>\n\t\t\t<integer>48</integer>\n\t\t</dict>\n\t</dict>\n</dict>\n</plist>\n"
                }
              }
            }
          }
        },
        "responses": {
          "200": {
            "description": "stored: the configuration as stored; `ignored` (present only when not empty) lists keys accepted but not honoured, each with why, which are not stored (`AttributionWindows.global.install.ignoreInteractionType`: honoured per ad network only)",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "properties": {
                    "ignored": {
                      "type": "array",
                      "items": {
                        "type": "string"
                      }
                    }
                  }
                },
                "examples": {
                  "configured": {
                    "summary": "stored",
                    "value": {
                      "AttributionCooldown": {
                        "install-cooldown-hours": 24,
                        "re-engagement-cooldown-hours": 48
                      },
                      "AttributionCopyEndpoint": "https://adattribution.example.com",
                      "AttributionWindows": {
                        "example.adattributionkit": {
                          "install": {
                            "click": 7,
                            "ignoreInteractionType": "view",
                            "view": 1
                          }
                        },
                        "global": {
                          "install": {
                            "click": 30,
                            "view": 1
                          }
                        }
                      },
                      "EligibleForAdAttributionKitReengagementPostbackCopies": true,
                      "item-identifier": 1108187390
                    }
                  },
                  "ignored": {
                    "summary": "stored without the key it lists under ignored",
                    "value": {
                      "AttributionWindows": {
                        "global": {
                          "install": {
                            "click": 30
                          }
                        }
                      },
                      "ignored": [
                        "AttributionWindows.global.install.ignoreInteractionType: not honoured in global; set it per ad network"
                      ],
                      "item-identifier": 1108187390
                    }
                  },
                  "info-plist": {
                    "summary": "stored: OptInForReengagementPostbackCopies read as EligibleForAdAttributionKitReengagementPostbackCopies",
                    "value": {
                      "AttributionCooldown": {
                        "install-cooldown-hours": 24,
                        "re-engagement-cooldown-hours": 48
                      },
                      "AttributionCopyEndpoint": "https://adattribution.example.com",
                      "AttributionWindows": {
                        "global": {
                          "install": {
                            "click": 30,
                            "view": 1
                          }
                        }
                      },
                      "EligibleForAdAttributionKitReengagementPostbackCopies": true,
                      "item-identifier": 1108187390
                    }
                  }
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
      }
    },
    "/v1/admin/advertised-apps/{item}/keys": {
      "servers": [
        {
          "url": "http://{host}:{port}",
          "description": "the admin service (`admin`): the admin API, /metrics, and /ready with details",
          "variables": {
            "host": {
              "default": "127.0.0.1",
              "description": "admin's HTTP_HOST"
            },
            "port": {
              "default": "8081",
              "description": "admin's HTTP_PORT"
            }
          }
        }
      ],
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
        "operationId": "issueAppKey",
        "tags": [
          "Admin"
        ],
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
                },
                "examples": {
                  "issued": {
                    "summary": "the key, shown only here",
                    "value": {
                      "advertised-item-identifier": "1108187390",
                      "app-key": "ak_bf77116db942ab5d16f4244e18b5098350671fff22ec0160ab2bd0f68159b954",
                      "issued-at": 1772359200000,
                      "key-identifier": "b1ff894441c9"
                    }
                  }
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
        "operationId": "listAppKeys",
        "tags": [
          "Admin"
        ],
        "summary": "The app's live keys: their ids and issue times, never the keys",
        "security": [
          {
            "adminToken": []
          }
        ],
        "responses": {
          "200": {
            "description": "the keys",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/AppKeys"
                },
                "examples": {
                  "keys": {
                    "summary": "two live keys during a rotation",
                    "value": {
                      "advertised-item-identifier": "1108187390",
                      "keys": [
                        {
                          "issued-at": 1772359200000,
                          "key-identifier": "b1ff894441c9"
                        },
                        {
                          "issued-at": 1772442000000,
                          "key-identifier": "e40a5c9d2b17"
                        }
                      ]
                    }
                  }
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
    "/v1/admin/advertised-apps/{item}/keys/{key}": {
      "servers": [
        {
          "url": "http://{host}:{port}",
          "description": "the admin service (`admin`): the admin API, /metrics, and /ready with details",
          "variables": {
            "host": {
              "default": "127.0.0.1",
              "description": "admin's HTTP_HOST"
            },
            "port": {
              "default": "8081",
              "description": "admin's HTTP_PORT"
            }
          }
        }
      ],
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
        },
        {
          "name": "key",
          "in": "path",
          "required": true,
          "schema": {
            "type": "string"
          },
          "description": "the key's `key-identifier`"
        }
      ],
      "delete": {
        "operationId": "revokeAppKey",
        "tags": [
          "Admin"
        ],
        "summary": "Revoke one of the app's keys: refused (401 invalid-app-key) from then on, within 10 s on every ingest replica (each remembers a key's app that long)",
        "security": [
          {
            "adminToken": []
          }
        ],
        "responses": {
          "200": {
            "description": "revoked",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "properties": {
                    "advertised-item-identifier": {
                      "type": "string"
                    },
                    "key-identifier": {
                      "type": "string"
                    },
                    "revoked": {
                      "type": "boolean"
                    }
                  }
                },
                "examples": {
                  "revoked": {
                    "summary": "revoked",
                    "value": {
                      "advertised-item-identifier": "1108187390",
                      "key-identifier": "b1ff894441c9",
                      "revoked": true
                    }
                  }
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
    "/v1/admin/advertised-apps/{item}/rejections": {
      "servers": [
        {
          "url": "http://{host}:{port}",
          "description": "the admin service (`admin`): the admin API, /metrics, and /ready with details",
          "variables": {
            "host": {
              "default": "127.0.0.1",
              "description": "admin's HTTP_HOST"
            },
            "port": {
              "default": "8081",
              "description": "admin's HTTP_PORT"
            }
          }
        }
      ],
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
        "operationId": "listAdvertisedAppRejections",
        "tags": [
          "Admin"
        ],
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
                },
                "examples": {
                  "rejections": {
                    "summary": "an organic install, and an update no conversion took",
                    "value": {
                      "rejections": [
                        {
                          "detail": "the conversion was not attributed (no-eligible-impression)",
                          "event-identifier": "a7c8af01-cd6f-43f0-b8e7-cd5a55642be7",
                          "reason": "no-eligible-impression"
                        },
                        {
                          "detail": "no conversion took this update within 2 days (scaled, at least 10 minutes) of its time",
                          "event-identifier": "82bde454-9975-4270-accb-90682a720f75",
                          "reason": "conversion-not-found"
                        }
                      ]
                    }
                  }
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
      "servers": [
        {
          "url": "http://{host}:{port}",
          "description": "the admin service (`admin`): the admin API, /metrics, and /ready with details",
          "variables": {
            "host": {
              "default": "127.0.0.1",
              "description": "admin's HTTP_HOST"
            },
            "port": {
              "default": "8081",
              "description": "admin's HTTP_PORT"
            }
          }
        }
      ],
      "get": {
        "operationId": "listDeadLetters",
        "tags": [
          "Admin"
        ],
        "summary": "Postbacks that exhausted their retries or may not be sent, newest first",
        "security": [
          {
            "adminToken": []
          }
        ],
        "parameters": [
          {
            "name": "count",
            "in": "query",
            "required": false,
            "schema": {
              "type": "integer",
              "minimum": 1,
              "maximum": 1000,
              "default": 100
            }
          },
          {
            "name": "before",
            "in": "query",
            "required": false,
            "schema": {
              "type": "string",
              "pattern": "^[0-9]+-[0-9]+-[0-9]+$"
            },
            "description": "the previous page's `next`: list the dead letters after it"
          }
        ],
        "responses": {
          "200": {
            "description": "dead letters and their total",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/DeadLetters"
                },
                "examples": {
                  "page": {
                    "summary": "a full page (count=2): next leads to the page after",
                    "value": {
                      "dead-letters": [
                        {
                          "attempts": 10,
                          "destination": "advertiser-copy",
                          "error": "destination-unresolvable",
                          "first-attempt-at": 1772460000000,
                          "id": "6-1773237612412-1",
                          "postback-identifier": "19b0aa94-c0bc-4ad3-a0e2-a1f47f9fad49",
                          "replayable": true,
                          "url": "https://example.com/.well-known/appattribution/report-attribution/"
                        },
                        {
                          "attempts": 10,
                          "destination": "ad-network",
                          "error": "HTTP 503",
                          "first-attempt-at": 1772460000000,
                          "id": "6-1773237612412-0",
                          "postback-identifier": "d3d0329d-2181-4b86-a90d-fce56c8a0c82",
                          "replayable": true,
                          "url": "https://postbacks.example.com/adattributionkit"
                        }
                      ],
                      "next": "6-1773237612412-0",
                      "total": 13
                    }
                  },
                  "last-page": {
                    "summary": "the last page",
                    "value": {
                      "dead-letters": [
                        {
                          "attempts": 10,
                          "destination": "ad-network",
                          "error": "HTTP 503",
                          "first-attempt-at": 1772460000000,
                          "id": "6-1773237612412-0",
                          "postback-identifier": "d3d0329d-2181-4b86-a90d-fce56c8a0c82",
                          "replayable": true,
                          "url": "https://postbacks.example.com/adattributionkit"
                        }
                      ],
                      "total": 1
                    }
                  }
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
    "/v1/admin/dead-letters/{id}/replay": {
      "servers": [
        {
          "url": "http://{host}:{port}",
          "description": "the admin service (`admin`): the admin API, /metrics, and /ready with details",
          "variables": {
            "host": {
              "default": "127.0.0.1",
              "description": "admin's HTTP_HOST"
            },
            "port": {
              "default": "8081",
              "description": "admin's HTTP_PORT"
            }
          }
        }
      ],
      "parameters": [
        {
          "name": "id",
          "in": "path",
          "required": true,
          "schema": {
            "type": "string",
            "pattern": "^[0-9]+-[0-9]+-[0-9]+$"
          },
          "description": "dead letter id as listed: `<partition>-<stream entry id>`, e.g. `7-1700000000000-0`"
        }
      ],
      "post": {
        "operationId": "replayDeadLetter",
        "tags": [
          "Admin"
        ],
        "summary": "Replay one dead letter: a fresh series of attempts, signed with the current key",
        "security": [
          {
            "adminToken": []
          }
        ],
        "responses": {
          "200": {
            "description": "replayed",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Replayed"
                },
                "examples": {
                  "replayed": {
                    "summary": "replayed",
                    "value": {
                      "replayed": 1
                    }
                  }
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
          },
          "409": {
            "$ref": "#/components/responses/Problem"
          }
        }
      }
    },
    "/v1/admin/dead-letters/replay": {
      "servers": [
        {
          "url": "http://{host}:{port}",
          "description": "the admin service (`admin`): the admin API, /metrics, and /ready with details",
          "variables": {
            "host": {
              "default": "127.0.0.1",
              "description": "admin's HTTP_HOST"
            },
            "port": {
              "default": "8081",
              "description": "admin's HTTP_PORT"
            }
          }
        }
      ],
      "post": {
        "operationId": "replayDeadLetters",
        "tags": [
          "Admin"
        ],
        "summary": "Replay every dead letter, oldest first",
        "security": [
          {
            "adminToken": []
          }
        ],
        "responses": {
          "200": {
            "description": "how many were replayed",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Replayed"
                },
                "examples": {
                  "replayed": {
                    "summary": "every dead letter replayed",
                    "value": {
                      "replayed": 13
                    }
                  }
                }
              }
            }
          },
          "401": {
            "$ref": "#/components/responses/Problem"
          }
        }
      }
    },
    "/v1/admin/advertised-apps/{item}/conversion-value-schema": {
      "servers": [
        {
          "url": "http://{host}:{port}",
          "description": "the admin service (`admin`): the admin API, /metrics, and /ready with details",
          "variables": {
            "host": {
              "default": "127.0.0.1",
              "description": "admin's HTTP_HOST"
            },
            "port": {
              "default": "8081",
              "description": "admin's HTTP_PORT"
            }
          }
        }
      ],
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
      "put": {
        "operationId": "putConversionValueSchema",
        "tags": [
          "Admin"
        ],
        "summary": "Upload a new conversion-value schema version (conversions keep the version in force when attributed)",
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
                "$ref": "#/components/schemas/ConversionValueSchema"
              },
              "examples": {
                "two-windows": {
                  "summary": "Window 0: revenue, events, sessions, most valuable first; window 1: coarse values",
                  "value": {
                    "windows": [
                      {
                        "window": 0,
                        "rules": [
                          {
                            "when": {
                              "revenue": {
                                "USD": 10
                              }
                            },
                            "fine": 63,
                            "coarse": "high",
                            "lock": true
                          },
                          {
                            "when": {
                              "events": {
                                "level_complete": 5
                              }
                            },
                            "fine": 40,
                            "coarse": "high"
                          },
                          {
                            "when": {
                              "sessions": 3
                            },
                            "fine": 20,
                            "coarse": "medium"
                          },
                          {
                            "when": {},
                            "fine": 1,
                            "coarse": "low"
                          }
                        ]
                      },
                      {
                        "window": 1,
                        "allow-decrease": false,
                        "rules": [
                          {
                            "when": {
                              "revenue": {
                                "USD": 20
                              }
                            },
                            "fine": 0,
                            "coarse": "high"
                          },
                          {
                            "when": {
                              "sessions": 10
                            },
                            "fine": 0,
                            "coarse": "medium"
                          },
                          {
                            "when": {},
                            "fine": 0,
                            "coarse": "low"
                          }
                        ]
                      }
                    ]
                  }
                }
              }
            }
          }
        },
        "responses": {
          "201": {
            "description": "stored, with its version",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/ConversionValueSchema"
                },
                "examples": {
                  "two-windows": {
                    "summary": "stored as version 1",
                    "value": {
                      "version": 1,
                      "windows": [
                        {
                          "rules": [
                            {
                              "coarse": "high",
                              "fine": 63,
                              "lock": true,
                              "when": {
                                "revenue": {
                                  "USD": 10
                                }
                              }
                            },
                            {
                              "coarse": "high",
                              "fine": 40,
                              "when": {
                                "events": {
                                  "level_complete": 5
                                }
                              }
                            },
                            {
                              "coarse": "medium",
                              "fine": 20,
                              "when": {
                                "sessions": 3
                              }
                            },
                            {
                              "coarse": "low",
                              "fine": 1,
                              "when": {}
                            }
                          ],
                          "window": 0
                        },
                        {
                          "allow-decrease": false,
                          "rules": [
                            {
                              "coarse": "high",
                              "fine": 0,
                              "when": {
                                "revenue": {
                                  "USD": 20
                                }
                              }
                            },
                            {
                              "coarse": "medium",
                              "fine": 0,
                              "when": {
                                "sessions": 10
                              }
                            },
                            {
                              "coarse": "low",
                              "fine": 0,
                              "when": {}
                            }
                          ],
                          "window": 1
                        }
                      ]
                    }
                  }
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
          },
          "413": {
            "$ref": "#/components/responses/Problem"
          }
        }
      },
      "get": {
        "operationId": "getConversionValueSchema",
        "tags": [
          "Admin"
        ],
        "summary": "The current conversion-value schema",
        "security": [
          {
            "adminToken": []
          }
        ],
        "responses": {
          "200": {
            "description": "the schema",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/ConversionValueSchema"
                },
                "examples": {
                  "current": {
                    "summary": "the current version",
                    "value": {
                      "version": 1,
                      "windows": [
                        {
                          "rules": [
                            {
                              "coarse": "high",
                              "fine": 63,
                              "lock": true,
                              "when": {
                                "revenue": {
                                  "USD": 10
                                }
                              }
                            },
                            {
                              "coarse": "high",
                              "fine": 40,
                              "when": {
                                "events": {
                                  "level_complete": 5
                                }
                              }
                            },
                            {
                              "coarse": "medium",
                              "fine": 20,
                              "when": {
                                "sessions": 3
                              }
                            },
                            {
                              "coarse": "low",
                              "fine": 1,
                              "when": {}
                            }
                          ],
                          "window": 0
                        },
                        {
                          "allow-decrease": false,
                          "rules": [
                            {
                              "coarse": "high",
                              "fine": 0,
                              "when": {
                                "revenue": {
                                  "USD": 20
                                }
                              }
                            },
                            {
                              "coarse": "medium",
                              "fine": 0,
                              "when": {
                                "sessions": 10
                              }
                            },
                            {
                              "coarse": "low",
                              "fine": 0,
                              "when": {}
                            }
                          ],
                          "window": 1
                        }
                      ]
                    }
                  }
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
    "/v1/admin/advertised-apps/{item}/conversion-value-schema/{version}": {
      "servers": [
        {
          "url": "http://{host}:{port}",
          "description": "the admin service (`admin`): the admin API, /metrics, and /ready with details",
          "variables": {
            "host": {
              "default": "127.0.0.1",
              "description": "admin's HTTP_HOST"
            },
            "port": {
              "default": "8081",
              "description": "admin's HTTP_PORT"
            }
          }
        }
      ],
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
        },
        {
          "name": "version",
          "in": "path",
          "required": true,
          "schema": {
            "type": "integer",
            "minimum": 1
          }
        }
      ],
      "get": {
        "operationId": "getConversionValueSchemaVersion",
        "tags": [
          "Admin"
        ],
        "summary": "One version of the conversion-value schema",
        "security": [
          {
            "adminToken": []
          }
        ],
        "responses": {
          "200": {
            "description": "the schema",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/ConversionValueSchema"
                },
                "examples": {
                  "version-1": {
                    "summary": "version 1",
                    "value": {
                      "version": 1,
                      "windows": [
                        {
                          "rules": [
                            {
                              "coarse": "high",
                              "fine": 63,
                              "lock": true,
                              "when": {
                                "revenue": {
                                  "USD": 10
                                }
                              }
                            },
                            {
                              "coarse": "high",
                              "fine": 40,
                              "when": {
                                "events": {
                                  "level_complete": 5
                                }
                              }
                            },
                            {
                              "coarse": "medium",
                              "fine": 20,
                              "when": {
                                "sessions": 3
                              }
                            },
                            {
                              "coarse": "low",
                              "fine": 1,
                              "when": {}
                            }
                          ],
                          "window": 0
                        },
                        {
                          "allow-decrease": false,
                          "rules": [
                            {
                              "coarse": "high",
                              "fine": 0,
                              "when": {
                                "revenue": {
                                  "USD": 20
                                }
                              }
                            },
                            {
                              "coarse": "medium",
                              "fine": 0,
                              "when": {
                                "sessions": 10
                              }
                            },
                            {
                              "coarse": "low",
                              "fine": 0,
                              "when": {}
                            }
                          ],
                          "window": 1
                        }
                      ]
                    }
                  }
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
    "/v1/activity": {
      "post": {
        "operationId": "reportActivity",
        "tags": [
          "Events"
        ],
        "summary": "Report a device's sessions, named events and revenue; the pinned schema turns them into value updates",
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
            "description": "a retry with the same key and body returns the first answer; with another body, 422. Remembered 24 h per route, device and advertised app"
          }
        ],
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/ActivityReport"
              },
              "examples": {
                "activity": {
                  "summary": "Sessions, named events and revenue since the last report",
                  "value": {
                    "device-identifier": "device-0001",
                    "advertised-item-identifier": 1108187390,
                    "time": 1772456400000,
                    "sessions": 3,
                    "events": {
                      "level_complete": 2
                    },
                    "revenue": {
                      "USD": 4.99
                    }
                  }
                },
                "re-engagement": {
                  "summary": "Activity of the re-engagement its conversionTag names",
                  "value": {
                    "device-identifier": "device-0003",
                    "advertised-item-identifier": 1108187390,
                    "time": 1772456400000,
                    "sessions": 1,
                    "conversionTag": "edffbb15-2c70-49c9-883d-c2133e51f3c1"
                  }
                }
              }
            }
          }
        },
        "responses": {
          "503": {
            "description": "not acknowledged; retry after `Retry-After` seconds with the same `Idempotency-Key`. `overloaded` (ingest at capacity: `INGEST_MAX_IN_FLIGHT`, `INGEST_QUEUE_TARGET_MS`) and `pipeline-lagging` (the verifier past `INGEST_MAX_EVENTS_LAG` behind) are answered at once and wrote nothing; `redis-unreachable` (Redis unavailable) and `replication-timeout` (written, not yet on a replica) may have written it",
            "headers": {
              "Retry-After": {
                "schema": {
                  "type": "integer"
                }
              }
            },
            "content": {
              "application/problem+json": {
                "schema": {
                  "$ref": "#/components/schemas/Problem"
                },
                "examples": {
                  "overloaded": {
                    "summary": "ingest is at capacity; nothing was written",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/overloaded",
                      "title": "Service Unavailable",
                      "status": 503,
                      "detail": "ingest is at capacity (writes are waiting 212 ms for Redis); nothing was written, retry later",
                      "reason": "overloaded"
                    }
                  },
                  "pipeline-lagging": {
                    "summary": "the verifier is too far behind; nothing was written",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/pipeline-lagging",
                      "title": "Service Unavailable",
                      "status": 503,
                      "detail": "the pipeline is 200417 events behind (ceiling 200000); nothing was written, retry later",
                      "reason": "pipeline-lagging"
                    }
                  },
                  "redis-unreachable": {
                    "summary": "Redis is unavailable: it may be written, retry with the same Idempotency-Key",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/redis-unreachable",
                      "title": "Service Unavailable",
                      "status": 503,
                      "detail": "Redis is unavailable; retry after Retry-After (an event with the same Idempotency-Key: it may be written)",
                      "reason": "redis-unreachable"
                    }
                  },
                  "replication-timeout": {
                    "summary": "written, but no replica confirmed it in time: retry with the same Idempotency-Key",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/replication-timeout",
                      "title": "Service Unavailable",
                      "status": 503,
                      "detail": "the event is written but 0 of 1 replicas confirmed it within 1000 ms; retry with the same Idempotency-Key",
                      "reason": "replication-timeout",
                      "event-identifier": "24f5eed6-8ac2-4ec3-9c80-31952a668041"
                    }
                  }
                }
              }
            }
          },
          "429": {
            "description": "`rate-limited`: this caller (ad network or app) is past `INGEST_CALLER_RATE`; nothing was written, retry after `Retry-After` seconds",
            "headers": {
              "Retry-After": {
                "schema": {
                  "type": "integer"
                }
              }
            },
            "content": {
              "application/problem+json": {
                "schema": {
                  "$ref": "#/components/schemas/Problem"
                },
                "examples": {
                  "rate-limited": {
                    "summary": "this caller is past INGEST_CALLER_RATE; nothing was written",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/rate-limited",
                      "title": "Too Many Requests",
                      "status": 429,
                      "detail": "app 1108187390 is past its 500 events/s; nothing of this was written, retry after Retry-After seconds",
                      "reason": "rate-limited"
                    }
                  }
                }
              }
            }
          },
          "202": {
            "description": "accepted",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Accepted"
                },
                "examples": {
                  "activity": {
                    "summary": "accepted",
                    "value": {
                      "event-identifier": "136d6896-a3c5-49d2-8f5d-1b6dc801be4a"
                    }
                  },
                  "re-engagement": {
                    "summary": "accepted",
                    "value": {
                      "event-identifier": "16c64555-74b9-47cb-900f-5ebc2df5c161"
                    }
                  }
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
    "/v1/conversion-values/evaluate": {
      "post": {
        "operationId": "evaluateConversionValues",
        "tags": [
          "Events"
        ],
        "summary": "The value an app would report next for these window totals (read-only)",
        "security": [
          {
            "appKey": []
          }
        ],
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/EvaluationRequest"
              },
              "examples": {
                "changed": {
                  "summary": "Window 0's totals so far",
                  "value": {
                    "advertised-item-identifier": 1108187390,
                    "window": 0,
                    "sessions": 3,
                    "events": {
                      "level_complete": 2
                    },
                    "revenue": {
                      "USD": 4.99
                    }
                  }
                },
                "unchanged": {
                  "summary": "The same totals, with the value already reported",
                  "value": {
                    "advertised-item-identifier": 1108187390,
                    "window": 0,
                    "sessions": 3,
                    "previous": {
                      "fine": 20,
                      "coarse": "medium",
                      "lock": false
                    }
                  }
                },
                "pinned-version": {
                  "summary": "Against schema version 1 (the version a conversion was attributed under)",
                  "value": {
                    "advertised-item-identifier": 1108187390,
                    "window": 0,
                    "sessions": 12,
                    "revenue": {
                      "USD": 12.5
                    },
                    "version": 1
                  }
                }
              }
            }
          }
        },
        "responses": {
          "200": {
            "description": "the value, and whether it is an update",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Evaluation"
                },
                "examples": {
                  "changed": {
                    "summary": "a new value to report",
                    "value": {
                      "changed": true,
                      "coarseConversionValue": "medium",
                      "fineConversionValue": 20,
                      "lockPostback": false,
                      "version": 1
                    }
                  },
                  "unchanged": {
                    "summary": "nothing new to report",
                    "value": {
                      "changed": false,
                      "coarseConversionValue": "medium",
                      "fineConversionValue": 20,
                      "lockPostback": false,
                      "version": 1
                    }
                  },
                  "pinned-version": {
                    "summary": "the top rule: report it and lock the window",
                    "value": {
                      "changed": true,
                      "coarseConversionValue": "high",
                      "fineConversionValue": 63,
                      "lockPostback": true,
                      "version": 1
                    }
                  }
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
          "404": {
            "$ref": "#/components/responses/Problem"
          }
        }
      }
    },
    "/v1/impressions/batch": {
      "post": {
        "operationId": "reportImpressions",
        "tags": [
          "Events"
        ],
        "summary": "Report up to 1,000 impressions in one request; each item is answered on its own",
        "parameters": [
          {
            "name": "Idempotency-Key",
            "in": "header",
            "required": false,
            "schema": {
              "type": "string",
              "minLength": 1,
              "maxLength": 240
            },
            "description": "gives item i (from 0) the key `<header>:<i>` unless it carries its own `idempotency-key`; an empty or longer header refuses the whole batch (400 `invalid-idempotency-key`)"
          }
        ],
        "requestBody": {
          "required": true,
          "description": "a JSON array of the single route's objects, or NDJSON (one per line); each may carry `idempotency-key`. At most `MAX_BATCH_BODY_BYTES` (4 MiB by default)",
          "content": {
            "application/json": {
              "schema": {
                "type": "array",
                "minItems": 1,
                "maxItems": 1000,
                "items": {
                  "allOf": [
                    {
                      "$ref": "#/components/schemas/ImpressionRequest"
                    },
                    {
                      "$ref": "#/components/schemas/BatchItemKey"
                    }
                  ]
                }
              },
              "examples": {
                "json-array": {
                  "summary": "A JSON array; one item has its own idempotency-key, one is refused on its own",
                  "value": [
                    {
                      "device-identifier": "device-0011",
                      "impression": "eyJhbGciOiJFUzI1NiIsImtpZCI6ImV4YW1wbGUuYWRhdHRyaWJ1dGlvbmtpdCJ9.eyJpbXByZXNzaW9uLWlkZW50aWZpZXIiOiJBMUIzQUQyQy0zNENDLTRCMzMtQkFGNC1EQzBENURBNjBGMkEiLCJhZC1uZXR3b3JrLWlkZW50aWZpZXIiOiJleGFtcGxlLmFkYXR0cmlidXRpb25raXQiLCJhZHZlcnRpc2VkLWl0ZW0taWRlbnRpZmllciI6MTEwODE4NzM5MCwicHVibGlzaGVyLWl0ZW0taWRlbnRpZmllciI6NTgzODQ5Miwic291cmNlLWlkZW50aWZpZXIiOjEyMzQsInRpbWVzdGFtcCI6MTc3MjQ0NTU5NTAwMCwiaW1wcmVzc2lvbi10eXBlIjoiYXBwLWltcHJlc3Npb24ifQ.gSqJI4xCwlYVzfA3TmbJkKiaB4GnNpdST-K63lvtkvE-TnGKyfbjggsV8t4T0RfXNrJA3DBJCHclb0sIOSSRig",
                      "interaction": {
                        "type": "click",
                        "loaded-at": 1772445596000,
                        "time": 1772445600000
                      },
                      "idempotency-key": "impression-device-0011-1"
                    },
                    {
                      "device-identifier": "device-0012",
                      "impression": "eyJhbGciOiJFUzI1NiIsImtpZCI6ImV4YW1wbGUuYWRhdHRyaWJ1dGlvbmtpdCJ9.eyJpbXByZXNzaW9uLWlkZW50aWZpZXIiOiJFNDNGRkY1RC0wNDg5LTQ1MUYtODIyQS03MDZBNkRFMDMzNjYiLCJhZC1uZXR3b3JrLWlkZW50aWZpZXIiOiJleGFtcGxlLmFkYXR0cmlidXRpb25raXQiLCJhZHZlcnRpc2VkLWl0ZW0taWRlbnRpZmllciI6MTEwODE4NzM5MCwicHVibGlzaGVyLWl0ZW0taWRlbnRpZmllciI6NTgzODQ5Miwic291cmNlLWlkZW50aWZpZXIiOjEyMzQsInRpbWVzdGFtcCI6MTc3MjQ0NTU5NTAwMCwiaW1wcmVzc2lvbi10eXBlIjoiYXBwLWltcHJlc3Npb24ifQ.Nz9TVAOaXkL-69mRaIrYOWYmHHis81CxGtkaFH9QQDxa8CPOvmt1a2UG7QxFz_aGr9laToBZX5EmomM4VdyG9A",
                      "interaction": {
                        "type": "view",
                        "begin": 1772445597000,
                        "time": 1772445600000
                      }
                    },
                    {
                      "device-identifier": "device-0013",
                      "impression": "eyJhbGciOiJFUzI1NiJ9",
                      "interaction": {
                        "type": "view",
                        "time": 1772445600000
                      }
                    }
                  ]
                }
              }
            },
            "application/x-ndjson": {
              "schema": {
                "type": "string",
                "description": "one JSON object per line, as in the array"
              },
              "examples": {
                "ndjson": {
                  "summary": "NDJSON (Content-Type: application/x-ndjson), one item per line",
                  "value": "{\"device-identifier\":\"device-0014\",\"impression\":\"eyJhbGciOiJFUzI1NiIsImtpZCI6ImV4YW1wbGUuYWRhdHRyaWJ1dGlvbmtpdCJ9.eyJpbXByZXNzaW9uLWlkZW50aWZpZXIiOiJDMDMyQ0ZGRi0zM0U1LTQ4RDktQjY3Mi1GMjc4QjEwQzNBMzgiLCJhZC1uZXR3b3JrLWlkZW50aWZpZXIiOiJleGFtcGxlLmFkYXR0cmlidXRpb25raXQiLCJhZHZlcnRpc2VkLWl0ZW0taWRlbnRpZmllciI6MTEwODE4NzM5MCwicHVibGlzaGVyLWl0ZW0taWRlbnRpZmllciI6NTgzODQ5Miwic291cmNlLWlkZW50aWZpZXIiOjEyMzQsInRpbWVzdGFtcCI6MTc3MjQ0NTU5NTAwMCwiaW1wcmVzc2lvbi10eXBlIjoiYXBwLWltcHJlc3Npb24ifQ.cEiYfXvnp4qQpuHAy2byqX10R76Pl6K6a3zQEnTS-urJdQZc0k-Bc3Iq7bKL0kGUiVO33QBBiJvqz0ADsk-ScQ\",\"interaction\":{\"type\":\"click\",\"loaded-at\":1772445596000,\"time\":1772445600000}}\n{\"device-identifier\":\"device-0015\",\"impression\":\"eyJhbGciOiJFUzI1NiIsImtpZCI6ImV4YW1wbGUuYWRhdHRyaWJ1dGlvbmtpdCJ9.eyJpbXByZXNzaW9uLWlkZW50aWZpZXIiOiJERTRGNjFEMy05ODJBLTRGNUItQUFBQy1GRjIxQjEyNzk1MkYiLCJhZC1uZXR3b3JrLWlkZW50aWZpZXIiOiJleGFtcGxlLmFkYXR0cmlidXRpb25raXQiLCJhZHZlcnRpc2VkLWl0ZW0taWRlbnRpZmllciI6MTEwODE4NzM5MCwicHVibGlzaGVyLWl0ZW0taWRlbnRpZmllciI6NTgzODQ5Miwic291cmNlLWlkZW50aWZpZXIiOjEyMzQsInRpbWVzdGFtcCI6MTc3MjQ0NTU5NTAwMCwiaW1wcmVzc2lvbi10eXBlIjoiYXBwLWltcHJlc3Npb24ifQ.otMdwvnxz9ihCymMlAAhzCDLX-0AvmOeeHPlj1S6HXqKqIMiyspsfYeTdBeJmpNffsAVFVC8Tr-5bhDP1c25FA\",\"interaction\":{\"type\":\"view\",\"time\":1772445600000}}\n"
                }
              }
            }
          }
        },
        "responses": {
          "200": {
            "description": "one result per item, in order: `status` 202 with its `event-identifier`, or the item's problem (400 invalid item, 401/403 app key, 413 `body-too-large` for an item larger than `MAX_BODY_BYTES`, 422 `idempotency-key-reused`, 429 `rate-limited`, 503 `replication-timeout`, which names the written `event-identifier`, or `redis-unreachable`). When an item was answered 429 or 503, the response carries the longest `Retry-After` they ask for",
            "headers": {
              "Retry-After": {
                "schema": {
                  "type": "integer"
                }
              }
            },
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/BatchAnswer"
                },
                "examples": {
                  "json-array": {
                    "summary": "one result per item, in order",
                    "value": {
                      "accepted": 2,
                      "refused": 1,
                      "results": [
                        {
                          "event-identifier": "dfe3b042-cd22-4d7c-8766-e29541e55967",
                          "status": 202
                        },
                        {
                          "event-identifier": "49ab1465-2793-4dec-a501-e2f567a65870",
                          "status": 202
                        },
                        {
                          "detail": "impression must be a compact JWS (three base64url parts)",
                          "reason": "invalid-components",
                          "status": 400,
                          "title": "Bad Request",
                          "type": "https://attribution-pipeline.dev/problems/invalid-components"
                        }
                      ]
                    }
                  },
                  "ndjson": {
                    "summary": "one result per line, in order",
                    "value": {
                      "accepted": 2,
                      "refused": 0,
                      "results": [
                        {
                          "event-identifier": "fff3f71d-8f00-42cb-b342-c54d88150862",
                          "status": 202
                        },
                        {
                          "event-identifier": "d59c8412-2b41-450f-bc2a-5e0d5c9543a8",
                          "status": 202
                        }
                      ]
                    }
                  }
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
          "503": {
            "description": "not acknowledged; retry after `Retry-After` seconds with the same `Idempotency-Key`. `overloaded` (ingest at capacity: `INGEST_MAX_IN_FLIGHT`, `INGEST_QUEUE_TARGET_MS`) and `pipeline-lagging` (the verifier past `INGEST_MAX_EVENTS_LAG` behind) are answered at once and wrote nothing; `redis-unreachable` (Redis unavailable) and `replication-timeout` (written, not yet on a replica) may have written it",
            "headers": {
              "Retry-After": {
                "schema": {
                  "type": "integer"
                }
              }
            },
            "content": {
              "application/problem+json": {
                "schema": {
                  "$ref": "#/components/schemas/Problem"
                },
                "examples": {
                  "overloaded": {
                    "summary": "ingest is at capacity; nothing was written",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/overloaded",
                      "title": "Service Unavailable",
                      "status": 503,
                      "detail": "ingest is at capacity (writes are waiting 212 ms for Redis); nothing was written, retry later",
                      "reason": "overloaded"
                    }
                  },
                  "pipeline-lagging": {
                    "summary": "the verifier is too far behind; nothing was written",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/pipeline-lagging",
                      "title": "Service Unavailable",
                      "status": 503,
                      "detail": "the pipeline is 200417 events behind (ceiling 200000); nothing was written, retry later",
                      "reason": "pipeline-lagging"
                    }
                  },
                  "redis-unreachable": {
                    "summary": "Redis is unavailable: it may be written, retry with the same Idempotency-Key",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/redis-unreachable",
                      "title": "Service Unavailable",
                      "status": 503,
                      "detail": "Redis is unavailable; retry after Retry-After (an event with the same Idempotency-Key: it may be written)",
                      "reason": "redis-unreachable"
                    }
                  }
                }
              }
            }
          }
        }
      }
    },
    "/v1/conversions/batch": {
      "post": {
        "operationId": "reportConversions",
        "tags": [
          "Events"
        ],
        "security": [
          {
            "appKey": []
          }
        ],
        "summary": "Report up to 1,000 conversions in one request; each item is answered on its own",
        "parameters": [
          {
            "name": "Idempotency-Key",
            "in": "header",
            "required": false,
            "schema": {
              "type": "string",
              "minLength": 1,
              "maxLength": 240
            },
            "description": "gives item i (from 0) the key `<header>:<i>` unless it carries its own `idempotency-key`; an empty or longer header refuses the whole batch (400 `invalid-idempotency-key`)"
          }
        ],
        "requestBody": {
          "required": true,
          "description": "a JSON array of the single route's objects, or NDJSON (one per line); each may carry `idempotency-key`. At most `MAX_BATCH_BODY_BYTES` (4 MiB by default)",
          "content": {
            "application/json": {
              "schema": {
                "type": "array",
                "minItems": 1,
                "maxItems": 1000,
                "items": {
                  "allOf": [
                    {
                      "$ref": "#/components/schemas/ConversionRequest"
                    },
                    {
                      "$ref": "#/components/schemas/BatchItemKey"
                    }
                  ]
                }
              },
              "examples": {
                "json-array": {
                  "summary": "A JSON array; one item has its own idempotency-key, one is refused on its own",
                  "value": [
                    {
                      "device-identifier": "device-0011",
                      "advertised-item-identifier": 1108187390,
                      "conversion-type": "download",
                      "time": 1772449200000,
                      "idempotency-key": "conversion-device-0011-1"
                    },
                    {
                      "device-identifier": "device-0012",
                      "advertised-item-identifier": 1108187390,
                      "conversion-type": "re-engagement",
                      "time": 1772449200000
                    },
                    {
                      "device-identifier": "device-0013",
                      "advertised-item-identifier": 1108187390,
                      "conversion-type": "download",
                      "time": 1772449200000,
                      "country-code": "ZZ"
                    }
                  ]
                }
              }
            },
            "application/x-ndjson": {
              "schema": {
                "type": "string",
                "description": "one JSON object per line, as in the array"
              },
              "examples": {
                "ndjson": {
                  "summary": "NDJSON (Content-Type: application/x-ndjson), one item per line",
                  "value": "{\"device-identifier\":\"device-0014\",\"advertised-item-identifier\":1108187390,\"conversion-type\":\"download\",\"time\":1772449200000,\"country-code\":\"DE\"}\n{\"device-identifier\":\"device-0015\",\"advertised-item-identifier\":1108187390,\"conversion-type\":\"download\",\"time\":1772449200000,\"country-code\":\"JP\"}\n"
                }
              }
            }
          }
        },
        "responses": {
          "200": {
            "description": "one result per item, in order: `status` 202 with its `event-identifier`, or the item's problem (400 invalid item, 401/403 app key, 413 `body-too-large` for an item larger than `MAX_BODY_BYTES`, 422 `idempotency-key-reused`, 429 `rate-limited`, 503 `replication-timeout`, which names the written `event-identifier`, or `redis-unreachable`). When an item was answered 429 or 503, the response carries the longest `Retry-After` they ask for",
            "headers": {
              "Retry-After": {
                "schema": {
                  "type": "integer"
                }
              }
            },
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/BatchAnswer"
                },
                "examples": {
                  "json-array": {
                    "summary": "one result per item, in order",
                    "value": {
                      "accepted": 2,
                      "refused": 1,
                      "results": [
                        {
                          "event-identifier": "aac7b65c-de53-43f7-b9fc-3569e5c69040",
                          "status": 202
                        },
                        {
                          "conversion-tag": "3aad2f5e-8fdd-4404-a7ca-2710f66ff567",
                          "event-identifier": "3aad2f5e-8fdd-4404-a7ca-2710f66ff567",
                          "status": 202
                        },
                        {
                          "detail": "country-code is an assigned ISO 3166-1 alpha-2 code in upper case, such as US or FR",
                          "reason": "invalid-country-code",
                          "status": 400,
                          "title": "Bad Request",
                          "type": "https://attribution-pipeline.dev/problems/invalid-country-code"
                        }
                      ]
                    }
                  },
                  "ndjson": {
                    "summary": "one result per line, in order",
                    "value": {
                      "accepted": 2,
                      "refused": 0,
                      "results": [
                        {
                          "event-identifier": "fdb58bf2-9f91-40e0-b979-505c4a7452d4",
                          "status": 202
                        },
                        {
                          "event-identifier": "f983c8d2-aa6a-44a7-b7ef-e6f1c2eae58e",
                          "status": 202
                        }
                      ]
                    }
                  }
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
          },
          "503": {
            "description": "not acknowledged; retry after `Retry-After` seconds with the same `Idempotency-Key`. `overloaded` (ingest at capacity: `INGEST_MAX_IN_FLIGHT`, `INGEST_QUEUE_TARGET_MS`) and `pipeline-lagging` (the verifier past `INGEST_MAX_EVENTS_LAG` behind) are answered at once and wrote nothing; `redis-unreachable` (Redis unavailable) and `replication-timeout` (written, not yet on a replica) may have written it",
            "headers": {
              "Retry-After": {
                "schema": {
                  "type": "integer"
                }
              }
            },
            "content": {
              "application/problem+json": {
                "schema": {
                  "$ref": "#/components/schemas/Problem"
                },
                "examples": {
                  "overloaded": {
                    "summary": "ingest is at capacity; nothing was written",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/overloaded",
                      "title": "Service Unavailable",
                      "status": 503,
                      "detail": "ingest is at capacity (writes are waiting 212 ms for Redis); nothing was written, retry later",
                      "reason": "overloaded"
                    }
                  },
                  "pipeline-lagging": {
                    "summary": "the verifier is too far behind; nothing was written",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/pipeline-lagging",
                      "title": "Service Unavailable",
                      "status": 503,
                      "detail": "the pipeline is 200417 events behind (ceiling 200000); nothing was written, retry later",
                      "reason": "pipeline-lagging"
                    }
                  },
                  "redis-unreachable": {
                    "summary": "Redis is unavailable: it may be written, retry with the same Idempotency-Key",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/redis-unreachable",
                      "title": "Service Unavailable",
                      "status": 503,
                      "detail": "Redis is unavailable; retry after Retry-After (an event with the same Idempotency-Key: it may be written)",
                      "reason": "redis-unreachable"
                    }
                  }
                }
              }
            }
          }
        }
      }
    },
    "/v1/conversion-value-updates/batch": {
      "post": {
        "operationId": "reportValueUpdates",
        "tags": [
          "Events"
        ],
        "security": [
          {
            "appKey": []
          }
        ],
        "summary": "Report up to 1,000 conversion-value updates in one request; each item is answered on its own",
        "parameters": [
          {
            "name": "Idempotency-Key",
            "in": "header",
            "required": false,
            "schema": {
              "type": "string",
              "minLength": 1,
              "maxLength": 240
            },
            "description": "gives item i (from 0) the key `<header>:<i>` unless it carries its own `idempotency-key`; an empty or longer header refuses the whole batch (400 `invalid-idempotency-key`)"
          }
        ],
        "requestBody": {
          "required": true,
          "description": "a JSON array of the single route's objects, or NDJSON (one per line); each may carry `idempotency-key`. At most `MAX_BATCH_BODY_BYTES` (4 MiB by default)",
          "content": {
            "application/json": {
              "schema": {
                "type": "array",
                "minItems": 1,
                "maxItems": 1000,
                "items": {
                  "allOf": [
                    {
                      "$ref": "#/components/schemas/ValueUpdateRequest"
                    },
                    {
                      "$ref": "#/components/schemas/BatchItemKey"
                    }
                  ]
                }
              },
              "examples": {
                "json-array": {
                  "summary": "A JSON array; one item has its own idempotency-key, one is refused on its own",
                  "value": [
                    {
                      "device-identifier": "device-0011",
                      "advertised-item-identifier": 1108187390,
                      "time": 1772452800000,
                      "fineConversionValue": 20,
                      "coarseConversionValue": "medium",
                      "idempotency-key": "update-device-0011-1"
                    },
                    {
                      "device-identifier": "device-0012",
                      "advertised-item-identifier": 1108187390,
                      "time": 1772452800000,
                      "fineValue": 8,
                      "coarseValue": "low"
                    },
                    {
                      "device-identifier": "device-0013",
                      "advertised-item-identifier": 1108187390,
                      "time": 1772452800,
                      "fineConversionValue": 10
                    }
                  ]
                }
              }
            },
            "application/x-ndjson": {
              "schema": {
                "type": "string",
                "description": "one JSON object per line, as in the array"
              },
              "examples": {
                "ndjson": {
                  "summary": "NDJSON (Content-Type: application/x-ndjson), one item per line",
                  "value": "{\"device-identifier\":\"device-0014\",\"advertised-item-identifier\":1108187390,\"time\":1772452800000,\"fineConversionValue\":40,\"coarseConversionValue\":\"high\",\"lockPostback\":true}\n{\"device-identifier\":\"device-0015\",\"advertised-item-identifier\":1108187390,\"time\":1772452800000,\"fineConversionValue\":1}\n"
                }
              }
            }
          }
        },
        "responses": {
          "200": {
            "description": "one result per item, in order: `status` 202 with its `event-identifier`, or the item's problem (400 invalid item, 401/403 app key, 413 `body-too-large` for an item larger than `MAX_BODY_BYTES`, 422 `idempotency-key-reused`, 429 `rate-limited`, 503 `replication-timeout`, which names the written `event-identifier`, or `redis-unreachable`). When an item was answered 429 or 503, the response carries the longest `Retry-After` they ask for",
            "headers": {
              "Retry-After": {
                "schema": {
                  "type": "integer"
                }
              }
            },
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/BatchAnswer"
                },
                "examples": {
                  "json-array": {
                    "summary": "one result per item, in order",
                    "value": {
                      "accepted": 2,
                      "refused": 1,
                      "results": [
                        {
                          "event-identifier": "176c0b78-d456-4904-95c3-b56c22b07288",
                          "status": 202
                        },
                        {
                          "event-identifier": "2fba313d-c7ff-410e-858f-c02208d765d2",
                          "status": 202
                        },
                        {
                          "detail": "time must be milliseconds since 1970 between 2000 and 2100; not 1772452800",
                          "reason": "invalid-time",
                          "status": 400,
                          "title": "Bad Request",
                          "type": "https://attribution-pipeline.dev/problems/invalid-time"
                        }
                      ]
                    }
                  },
                  "ndjson": {
                    "summary": "one result per line, in order",
                    "value": {
                      "accepted": 2,
                      "refused": 0,
                      "results": [
                        {
                          "event-identifier": "282e5b22-a366-4c7a-93bb-621206559895",
                          "status": 202
                        },
                        {
                          "event-identifier": "130e0d23-33de-4446-9c06-ec85d6e7e580",
                          "status": 202
                        }
                      ]
                    }
                  }
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
          },
          "503": {
            "description": "not acknowledged; retry after `Retry-After` seconds with the same `Idempotency-Key`. `overloaded` (ingest at capacity: `INGEST_MAX_IN_FLIGHT`, `INGEST_QUEUE_TARGET_MS`) and `pipeline-lagging` (the verifier past `INGEST_MAX_EVENTS_LAG` behind) are answered at once and wrote nothing; `redis-unreachable` (Redis unavailable) and `replication-timeout` (written, not yet on a replica) may have written it",
            "headers": {
              "Retry-After": {
                "schema": {
                  "type": "integer"
                }
              }
            },
            "content": {
              "application/problem+json": {
                "schema": {
                  "$ref": "#/components/schemas/Problem"
                },
                "examples": {
                  "overloaded": {
                    "summary": "ingest is at capacity; nothing was written",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/overloaded",
                      "title": "Service Unavailable",
                      "status": 503,
                      "detail": "ingest is at capacity (writes are waiting 212 ms for Redis); nothing was written, retry later",
                      "reason": "overloaded"
                    }
                  },
                  "pipeline-lagging": {
                    "summary": "the verifier is too far behind; nothing was written",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/pipeline-lagging",
                      "title": "Service Unavailable",
                      "status": 503,
                      "detail": "the pipeline is 200417 events behind (ceiling 200000); nothing was written, retry later",
                      "reason": "pipeline-lagging"
                    }
                  },
                  "redis-unreachable": {
                    "summary": "Redis is unavailable: it may be written, retry with the same Idempotency-Key",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/redis-unreachable",
                      "title": "Service Unavailable",
                      "status": 503,
                      "detail": "Redis is unavailable; retry after Retry-After (an event with the same Idempotency-Key: it may be written)",
                      "reason": "redis-unreachable"
                    }
                  }
                }
              }
            }
          }
        }
      }
    },
    "/v1/activity/batch": {
      "post": {
        "operationId": "reportActivities",
        "tags": [
          "Events"
        ],
        "security": [
          {
            "appKey": []
          }
        ],
        "summary": "Report up to 1,000 activity reports in one request; each item is answered on its own",
        "parameters": [
          {
            "name": "Idempotency-Key",
            "in": "header",
            "required": false,
            "schema": {
              "type": "string",
              "minLength": 1,
              "maxLength": 240
            },
            "description": "gives item i (from 0) the key `<header>:<i>` unless it carries its own `idempotency-key`; an empty or longer header refuses the whole batch (400 `invalid-idempotency-key`)"
          }
        ],
        "requestBody": {
          "required": true,
          "description": "a JSON array of the single route's objects, or NDJSON (one per line); each may carry `idempotency-key`. At most `MAX_BATCH_BODY_BYTES` (4 MiB by default)",
          "content": {
            "application/json": {
              "schema": {
                "type": "array",
                "minItems": 1,
                "maxItems": 1000,
                "items": {
                  "allOf": [
                    {
                      "$ref": "#/components/schemas/ActivityReport"
                    },
                    {
                      "$ref": "#/components/schemas/BatchItemKey"
                    }
                  ]
                }
              },
              "examples": {
                "json-array": {
                  "summary": "A JSON array; one item has its own idempotency-key, one is refused on its own",
                  "value": [
                    {
                      "device-identifier": "device-0011",
                      "advertised-item-identifier": 1108187390,
                      "time": 1772456400000,
                      "sessions": 2,
                      "idempotency-key": "activity-device-0011-1"
                    },
                    {
                      "device-identifier": "device-0012",
                      "advertised-item-identifier": 1108187390,
                      "time": 1772456400000,
                      "revenue": {
                        "EUR": 2.99
                      }
                    },
                    {
                      "device-identifier": "device-0013",
                      "advertised-item-identifier": 1108187390,
                      "time": 1772456400,
                      "sessions": 1
                    }
                  ]
                }
              }
            },
            "application/x-ndjson": {
              "schema": {
                "type": "string",
                "description": "one JSON object per line, as in the array"
              },
              "examples": {
                "ndjson": {
                  "summary": "NDJSON (Content-Type: application/x-ndjson), one item per line",
                  "value": "{\"device-identifier\":\"device-0014\",\"advertised-item-identifier\":1108187390,\"time\":1772456400000,\"sessions\":5,\"events\":{\"level_complete\":5}}\n{\"device-identifier\":\"device-0015\",\"advertised-item-identifier\":1108187390,\"time\":1772456400000,\"sessions\":1}\n"
                }
              }
            }
          }
        },
        "responses": {
          "200": {
            "description": "one result per item, in order: `status` 202 with its `event-identifier`, or the item's problem (400 invalid item, 401/403 app key, 413 `body-too-large` for an item larger than `MAX_BODY_BYTES`, 422 `idempotency-key-reused`, 429 `rate-limited`, 503 `replication-timeout`, which names the written `event-identifier`, or `redis-unreachable`). When an item was answered 429 or 503, the response carries the longest `Retry-After` they ask for",
            "headers": {
              "Retry-After": {
                "schema": {
                  "type": "integer"
                }
              }
            },
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/BatchAnswer"
                },
                "examples": {
                  "json-array": {
                    "summary": "one result per item, in order",
                    "value": {
                      "accepted": 2,
                      "refused": 1,
                      "results": [
                        {
                          "event-identifier": "27dad21e-da08-4eea-bcd6-c3c86b458308",
                          "status": 202
                        },
                        {
                          "event-identifier": "988f476c-f3a8-453e-89ce-ce884ce1f904",
                          "status": 202
                        },
                        {
                          "detail": "time must be milliseconds since 1970 between 2000 and 2100; not 1772456400",
                          "reason": "invalid-time",
                          "status": 400,
                          "title": "Bad Request",
                          "type": "https://attribution-pipeline.dev/problems/invalid-time"
                        }
                      ]
                    }
                  },
                  "ndjson": {
                    "summary": "one result per line, in order",
                    "value": {
                      "accepted": 2,
                      "refused": 0,
                      "results": [
                        {
                          "event-identifier": "c7b99fdc-7faa-45b6-815a-7925aceeeea9",
                          "status": 202
                        },
                        {
                          "event-identifier": "c25492f7-5b47-4739-a8d3-726e14a4d491",
                          "status": 202
                        }
                      ]
                    }
                  }
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
          },
          "503": {
            "description": "not acknowledged; retry after `Retry-After` seconds with the same `Idempotency-Key`. `overloaded` (ingest at capacity: `INGEST_MAX_IN_FLIGHT`, `INGEST_QUEUE_TARGET_MS`) and `pipeline-lagging` (the verifier past `INGEST_MAX_EVENTS_LAG` behind) are answered at once and wrote nothing; `redis-unreachable` (Redis unavailable) and `replication-timeout` (written, not yet on a replica) may have written it",
            "headers": {
              "Retry-After": {
                "schema": {
                  "type": "integer"
                }
              }
            },
            "content": {
              "application/problem+json": {
                "schema": {
                  "$ref": "#/components/schemas/Problem"
                },
                "examples": {
                  "overloaded": {
                    "summary": "ingest is at capacity; nothing was written",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/overloaded",
                      "title": "Service Unavailable",
                      "status": 503,
                      "detail": "ingest is at capacity (writes are waiting 212 ms for Redis); nothing was written, retry later",
                      "reason": "overloaded"
                    }
                  },
                  "pipeline-lagging": {
                    "summary": "the verifier is too far behind; nothing was written",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/pipeline-lagging",
                      "title": "Service Unavailable",
                      "status": 503,
                      "detail": "the pipeline is 200417 events behind (ceiling 200000); nothing was written, retry later",
                      "reason": "pipeline-lagging"
                    }
                  },
                  "redis-unreachable": {
                    "summary": "Redis is unavailable: it may be written, retry with the same Idempotency-Key",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/redis-unreachable",
                      "title": "Service Unavailable",
                      "status": 503,
                      "detail": "Redis is unavailable; retry after Retry-After (an event with the same Idempotency-Key: it may be written)",
                      "reason": "redis-unreachable"
                    }
                  }
                }
              }
            }
          }
        }
      }
    },
    "/v1/admin/devices/{device}": {
      "servers": [
        {
          "url": "http://{host}:{port}",
          "description": "the admin service (`admin`): the admin API, /metrics, and /ready with details",
          "variables": {
            "host": {
              "default": "127.0.0.1",
              "description": "admin's HTTP_HOST"
            },
            "port": {
              "default": "8081",
              "description": "admin's HTTP_PORT"
            }
          }
        }
      ],
      "parameters": [
        {
          "name": "device",
          "in": "path",
          "required": true,
          "schema": {
            "type": "string",
            "minLength": 1,
            "maxLength": 128
          },
          "description": "device identifier"
        }
      ],
      "delete": {
        "operationId": "eraseDevice",
        "tags": [
          "Admin"
        ],
        "summary": "Erase everything held about one device (pools, histories, view sets, idempotency records, unprocessed events, dead letters)",
        "description": "Messages are matched by the device their decoded body names, exactly; keys by their exact name. The path segment is percent-decoded once (`%2F` names a `/`, `%20` a space; invalid percent-encoding is 400 `invalid-device-identifier`); POST /v1/admin/device-erasures takes the identifier in a body instead",
        "security": [
          {
            "adminToken": []
          }
        ],
        "responses": {
          "200": {
            "description": "what was deleted",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Erased"
                },
                "examples": {
                  "device": {
                    "summary": "what was deleted",
                    "value": {
                      "deleted-entries": 11,
                      "deleted-keys": 2,
                      "device-identifier": "device-0001"
                    }
                  }
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
    "/v1/admin/device-erasures": {
      "servers": [
        {
          "url": "http://{host}:{port}",
          "description": "the admin service (`admin`): the admin API, /metrics, and /ready with details",
          "variables": {
            "host": {
              "default": "127.0.0.1",
              "description": "admin's HTTP_HOST"
            },
            "port": {
              "default": "8081",
              "description": "admin's HTTP_PORT"
            }
          }
        }
      ],
      "post": {
        "operationId": "eraseDevices",
        "tags": [
          "Admin"
        ],
        "summary": "Erase everything held about one device, named in the body (any identifier, `/` included)",
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
                "type": "object",
                "required": [
                  "device-identifier"
                ],
                "properties": {
                  "device-identifier": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 128
                  }
                }
              },
              "examples": {
                "device": {
                  "summary": "The device, named in the body",
                  "value": {
                    "device-identifier": "device-0001"
                  }
                }
              }
            }
          }
        },
        "responses": {
          "200": {
            "description": "what was deleted",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Erased"
                },
                "examples": {
                  "device": {
                    "summary": "what was deleted",
                    "value": {
                      "deleted-entries": 11,
                      "deleted-keys": 2,
                      "device-identifier": "device-0001"
                    }
                  }
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
      }
    },
    "/v1/admin/ad-networks/{id}/credentials": {
      "servers": [
        {
          "url": "http://{host}:{port}",
          "description": "the admin service (`admin`): the admin API, /metrics, and /ready with details",
          "variables": {
            "host": {
              "default": "127.0.0.1",
              "description": "admin's HTTP_HOST"
            },
            "port": {
              "default": "8081",
              "description": "admin's HTTP_PORT"
            }
          }
        }
      ],
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
      "post": {
        "operationId": "issueNetworkCredential",
        "tags": [
          "Admin"
        ],
        "summary": "Issue a credential for the ad network (shown once): on the public listener it reads the network's registration and refusals (`GET /v1/ad-networks/{id}`, `…/rejections`) and asks for test postbacks (`POST /v1/ad-networks/{id}/test-postbacks`), and nothing else. Several may be live (rotation: issue, switch, revoke the old)",
        "security": [
          {
            "adminToken": []
          }
        ],
        "responses": {
          "201": {
            "description": "the new credential",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/NetworkCredential"
                },
                "examples": {
                  "issued": {
                    "summary": "the credential, shown only here",
                    "value": {
                      "ad-network-identifier": "example.adattributionkit",
                      "credential": "nc_9b895555c17cdbb4b1bd1abba07e4d8239d224801c7393aabd9db37501d18863",
                      "credential-identifier": "c7d213e8a2c9",
                      "issued-at": 1772359200000
                    }
                  }
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
            "description": "not registered (`unknown-ad-network`)",
            "content": {
              "application/problem+json": {
                "schema": {
                  "$ref": "#/components/schemas/Problem"
                },
                "examples": {
                  "unknown-ad-network": {
                    "summary": "not registered",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/unknown-ad-network",
                      "title": "Not Found",
                      "status": 404,
                      "detail": "register ad network example.adattributionkit first",
                      "reason": "unknown-ad-network"
                    }
                  }
                }
              }
            }
          }
        }
      },
      "get": {
        "operationId": "listNetworkCredentials",
        "tags": [
          "Admin"
        ],
        "summary": "The network's live credentials: their ids and issue times, never the credentials",
        "security": [
          {
            "adminToken": []
          }
        ],
        "responses": {
          "200": {
            "description": "the credentials",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "ad-network-identifier",
                    "credentials"
                  ],
                  "properties": {
                    "ad-network-identifier": {
                      "type": "string"
                    },
                    "credentials": {
                      "type": "array",
                      "items": {
                        "type": "object",
                        "required": [
                          "credential-identifier"
                        ],
                        "properties": {
                          "credential-identifier": {
                            "type": "string"
                          },
                          "issued-at": {
                            "type": "integer"
                          }
                        }
                      }
                    }
                  }
                },
                "examples": {
                  "credentials": {
                    "summary": "one live credential",
                    "value": {
                      "ad-network-identifier": "example.adattributionkit",
                      "credentials": [
                        {
                          "credential-identifier": "c7d213e8a2c9",
                          "issued-at": 1772359200000
                        }
                      ]
                    }
                  }
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
    "/v1/admin/ad-networks/{id}/credentials/{credential}": {
      "servers": [
        {
          "url": "http://{host}:{port}",
          "description": "the admin service (`admin`): the admin API, /metrics, and /ready with details",
          "variables": {
            "host": {
              "default": "127.0.0.1",
              "description": "admin's HTTP_HOST"
            },
            "port": {
              "default": "8081",
              "description": "admin's HTTP_PORT"
            }
          }
        }
      ],
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
        },
        {
          "name": "credential",
          "in": "path",
          "required": true,
          "schema": {
            "type": "string"
          },
          "description": "the credential's `credential-identifier`"
        }
      ],
      "delete": {
        "operationId": "revokeNetworkCredential",
        "tags": [
          "Admin"
        ],
        "summary": "Revoke one of the network's credentials: refused (401) from its next request",
        "security": [
          {
            "adminToken": []
          }
        ],
        "responses": {
          "200": {
            "description": "revoked",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "properties": {
                    "ad-network-identifier": {
                      "type": "string"
                    },
                    "credential-identifier": {
                      "type": "string"
                    },
                    "revoked": {
                      "type": "boolean"
                    }
                  }
                },
                "examples": {
                  "revoked": {
                    "summary": "revoked",
                    "value": {
                      "ad-network-identifier": "example.adattributionkit",
                      "credential-identifier": "c7d213e8a2c9",
                      "revoked": true
                    }
                  }
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
            "description": "no such credential (`unknown-credential`)",
            "content": {
              "application/problem+json": {
                "schema": {
                  "$ref": "#/components/schemas/Problem"
                },
                "examples": {
                  "unknown-credential": {
                    "summary": "no live credential with this id",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/unknown-credential",
                      "title": "Not Found",
                      "status": 404,
                      "detail": "ad network example.adattributionkit has no credential c7d213e8a2c9",
                      "reason": "unknown-credential"
                    }
                  }
                }
              }
            }
          }
        }
      }
    },
    "/v1/ad-networks/{id}": {
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
        "operationId": "getOwnAdNetwork",
        "tags": [
          "Ad networks"
        ],
        "summary": "The ad network's own registration, read with one of its credentials (public listener)",
        "security": [
          {
            "networkCredential": []
          }
        ],
        "responses": {
          "200": {
            "description": "the registration",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/AdNetworkRegistration"
                },
                "examples": {
                  "registration": {
                    "summary": "the registration after a key rotation",
                    "value": {
                      "ad-network-identifier": "example.adattributionkit",
                      "postback-url": "https://postbacks.example.com/adattributionkit",
                      "previous-key-valid-until": 1772704800000,
                      "previous-public-key": "{\"alg\":\"ES256\",\"crv\":\"P-256\",\"kid\":\"example.adattributionkit\",\"kty\":\"EC\",\"use\":\"sig\",\"x\":\"zOntur9x5pRIg1pDtg1nkUZHPMnVFAUZrF2HIMKGc-U\",\"y\":\"cDQXexKDlFi2wD9-5ahPkTmyEPHwTgkbT2i3Creddi8\"}",
                      "public-key": "{\"alg\":\"ES256\",\"crv\":\"P-256\",\"kid\":\"example.adattributionkit\",\"kty\":\"EC\",\"use\":\"sig\",\"x\":\"k96953Co2oXs1a6V7fhX1y47kJnvY83FxuHoLXacMos\",\"y\":\"SQ2cszQdg_n-oF1iG14x39QHr0BqX1ii8QnENHfzI7I\"}",
                      "skan-public-key": "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEr4Uw1+XuHSzSDeBU8d1LHDcR6ae0wid4fjUQGO0yh/mmPUxLD82rw7hR3NOEjQnYejwhal0vv9i/JTqoKRNsHw=="
                    }
                  }
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/Problem"
          },
          "401": {
            "description": "no live credential (`unauthorized`); `ADMIN_TOKEN` is not one",
            "content": {
              "application/problem+json": {
                "schema": {
                  "$ref": "#/components/schemas/Problem"
                },
                "examples": {
                  "unauthorized": {
                    "summary": "no live credential of the network",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/unauthorized",
                      "title": "Unauthorized",
                      "status": 401,
                      "detail": "ad-network routes need one of the network's credentials (POST /v1/admin/ad-networks/{id}/credentials)",
                      "reason": "unauthorized"
                    }
                  }
                }
              }
            }
          },
          "403": {
            "description": "another network's credential (`credential-mismatch`)",
            "content": {
              "application/problem+json": {
                "schema": {
                  "$ref": "#/components/schemas/Problem"
                },
                "examples": {
                  "credential-mismatch": {
                    "summary": "another network's credential",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/credential-mismatch",
                      "title": "Forbidden",
                      "status": 403,
                      "detail": "this credential is not ad network partner.adattributionkit's",
                      "reason": "credential-mismatch"
                    }
                  }
                }
              }
            }
          },
          "404": {
            "$ref": "#/components/responses/Problem"
          }
        }
      }
    },
    "/v1/ad-networks/{id}/rejections": {
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
        "operationId": "listOwnAdNetworkRejections",
        "tags": [
          "Ad networks"
        ],
        "summary": "Recent refusals of the network's impressions, read with one of its credentials (public listener); the same answer as the admin route",
        "security": [
          {
            "networkCredential": []
          }
        ],
        "responses": {
          "200": {
            "description": "up to 100 refusals, and the unsigned ones apart",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Rejections"
                },
                "examples": {
                  "rejections": {
                    "summary": "two refusals, and one impression that only named the network",
                    "value": {
                      "rejections": [
                        {
                          "ad-network-identifier": "example.adattributionkit",
                          "detail": "a view counts only after 2 s on screen",
                          "event-identifier": "fdecfb67-abc0-4b86-b3e3-d44d65a82a85",
                          "impression-identifier": "50EFD619-EFF7-4908-AF57-0E4518A7533B",
                          "reason": "view-too-short"
                        },
                        {
                          "ad-network-identifier": "example.adattributionkit",
                          "detail": "this impression-identifier was already used",
                          "event-identifier": "faa1c8ea-f970-41b8-b90a-ef3064174bc8",
                          "impression-identifier": "85CC6D5A-8F59-4A5B-B09B-0506BABEE81C",
                          "reason": "impression-replayed"
                        }
                      ],
                      "unsigned-rejections": [
                        {
                          "ad-network-identifier": "example.adattributionkit",
                          "detail": "signature does not verify with the key",
                          "event-identifier": "195a13df-086d-4bcb-8ad6-0791011f344d",
                          "impression-identifier": "2531A811-2F2B-42B5-8CF2-7CD90EFF0EA3",
                          "reason": "invalid-signature"
                        }
                      ],
                      "unsigned-refusals": 1
                    }
                  }
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/Problem"
          },
          "401": {
            "description": "no live credential (`unauthorized`)",
            "content": {
              "application/problem+json": {
                "schema": {
                  "$ref": "#/components/schemas/Problem"
                },
                "examples": {
                  "unauthorized": {
                    "summary": "no live credential of the network",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/unauthorized",
                      "title": "Unauthorized",
                      "status": 401,
                      "detail": "ad-network routes need one of the network's credentials (POST /v1/admin/ad-networks/{id}/credentials)",
                      "reason": "unauthorized"
                    }
                  }
                }
              }
            }
          },
          "403": {
            "description": "another network's credential (`credential-mismatch`)",
            "content": {
              "application/problem+json": {
                "schema": {
                  "$ref": "#/components/schemas/Problem"
                },
                "examples": {
                  "credential-mismatch": {
                    "summary": "another network's credential",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/credential-mismatch",
                      "title": "Forbidden",
                      "status": 403,
                      "detail": "this credential is not ad network partner.adattributionkit's",
                      "reason": "credential-mismatch"
                    }
                  }
                }
              }
            }
          }
        }
      }
    },
    "/v1/ad-networks/{id}/test-postbacks": {
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
      "post": {
        "operationId": "requestTestPostbacks",
        "tags": [
          "Ad networks"
        ],
        "summary": "Test postbacks for the network's receiver, the server-side counterpart of Apple's developer-settings postbacks: the tier, interaction, conversion type, one or three windows, conversion tag, values and country chosen; made by the same field gating as real postbacks (tier 0 and non-winners get the first window's only), signed with the test key (`TEST_SIGNING_KEY_ID`, `attribution-pipeline-test/0`: a kid of its own, as Apple signs developer-settings postbacks with `apple-development-identifier/1`), sent at once through the dispatcher. Nothing of it enters a crowd, a cap or a device's state. At most 10 requests a minute per network (ingest and admin together); with one of the network's credentials (public listener)",
        "security": [
          {
            "networkCredential": []
          }
        ],
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/TestPostbackRequest"
              },
              "examples": {
                "tier-3": {
                  "summary": "A winner's postbacks at tier 3, one per window, with every field",
                  "value": {
                    "tier": 3,
                    "advertised-item-identifier": 1108187390,
                    "windows": 3,
                    "ad-interaction-type": "click",
                    "conversion-value": 42,
                    "coarse-conversion-value": "high",
                    "country-code": "US",
                    "publisher-item-identifier": 5838492,
                    "source-identifier": 1234
                  }
                },
                "re-engagement-runner-up": {
                  "summary": "A non-winning re-engagement's postback at tier 1 (its tag is checked and echoed)",
                  "value": {
                    "tier": 1,
                    "advertised-item-identifier": 1108187390,
                    "conversion-type": "re-engagement",
                    "conversion-tag": "edffbb15-2c70-49c9-883d-c2133e51f3c1",
                    "coarse-conversion-value": "medium",
                    "did-win": false
                  }
                },
                "invalid-country-code": {
                  "summary": "A country ISO 3166-1 does not assign: refused",
                  "value": {
                    "tier": 3,
                    "advertised-item-identifier": 1108187390,
                    "country-code": "ZZ"
                  }
                }
              }
            }
          }
        },
        "responses": {
          "202": {
            "description": "on its way: the postbacks reach the network's registered `postback-url` within a second or two (and the advertised app's `AttributionCopyEndpoint`, for a winner, as real ones do), signed with the test key; failures are retried and dead-lettered as for any postback",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/TestPostbacksAccepted"
                },
                "examples": {
                  "tier-3": {
                    "summary": "three postbacks on their way",
                    "value": {
                      "ad-network-identifier": "example.adattributionkit",
                      "development": true,
                      "event-identifier": "194f8563-c9c8-4d16-9770-1cd0eb2a6b7e",
                      "postback-identifiers": [
                        "c32d0e59-a30a-4a3b-b70d-6e2d5cc5831a",
                        "eb191d95-a85d-48c4-b714-94b750cf6619",
                        "96e10f0e-89ac-4867-b6a4-0c85d7bd5fd0"
                      ],
                      "tier": 3
                    }
                  },
                  "re-engagement-runner-up": {
                    "summary": "one postback on its way",
                    "value": {
                      "ad-network-identifier": "example.adattributionkit",
                      "development": true,
                      "event-identifier": "f71489d5-80ee-432a-8528-6a7404a4af8c",
                      "postback-identifiers": [
                        "28b9eab0-b32e-4f5f-b9a4-e4198e624df7"
                      ],
                      "tier": 1,
                      "conversion-tag": "edffbb15-2c70-49c9-883d-c2133e51f3c1"
                    }
                  }
                }
              }
            }
          },
          "400": {
            "description": "a choice out of range (`value-out-of-range`, `invalid-item-identifier`, `invalid-country-code`, `invalid-conversion-tag`, `conversion-tag-not-supported`), a member the request does not have (`unknown-key`), a body naming another network (`invalid-body`), or not this JSON (`invalid-json`)",
            "content": {
              "application/problem+json": {
                "schema": {
                  "$ref": "#/components/schemas/Problem"
                },
                "examples": {
                  "value-out-of-range": {
                    "summary": "a tier past 3",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/value-out-of-range",
                      "title": "Bad Request",
                      "status": 400,
                      "detail": "tier must be 0, 1, 2 or 3",
                      "reason": "value-out-of-range"
                    }
                  },
                  "unknown-key": {
                    "summary": "a member the request does not have",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/unknown-key",
                      "title": "Bad Request",
                      "status": 400,
                      "detail": "teir is not a member of a test-postback request",
                      "reason": "unknown-key"
                    }
                  },
                  "invalid-country-code": {
                    "summary": "a code ISO 3166-1 does not assign",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/invalid-country-code",
                      "title": "Bad Request",
                      "status": 400,
                      "detail": "country-code must be an ISO 3166-1 alpha-2 code in capitals, such as US or DE",
                      "reason": "invalid-country-code"
                    }
                  },
                  "conversion-tag-not-supported": {
                    "summary": "a tag on a conversion that is not a re-engagement",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/conversion-tag-not-supported",
                      "title": "Bad Request",
                      "status": 400,
                      "detail": "conversion-tag names a re-engagement, but conversion-type is download",
                      "reason": "conversion-tag-not-supported"
                    }
                  },
                  "invalid-body": {
                    "summary": "a body naming another ad network",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/invalid-body",
                      "title": "Bad Request",
                      "status": 400,
                      "detail": "ad-network-identifier must be the path's (example.adattributionkit) or absent",
                      "reason": "invalid-body"
                    }
                  }
                }
              }
            }
          },
          "401": {
            "description": "no live credential (`unauthorized`)",
            "content": {
              "application/problem+json": {
                "schema": {
                  "$ref": "#/components/schemas/Problem"
                },
                "examples": {
                  "unauthorized": {
                    "summary": "no live credential of the network",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/unauthorized",
                      "title": "Unauthorized",
                      "status": 401,
                      "detail": "ad-network routes need one of the network's credentials (POST /v1/admin/ad-networks/{id}/credentials)",
                      "reason": "unauthorized"
                    }
                  }
                }
              }
            }
          },
          "403": {
            "description": "another network's credential (`credential-mismatch`)",
            "content": {
              "application/problem+json": {
                "schema": {
                  "$ref": "#/components/schemas/Problem"
                },
                "examples": {
                  "credential-mismatch": {
                    "summary": "another network's credential",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/credential-mismatch",
                      "title": "Forbidden",
                      "status": 403,
                      "detail": "this credential is not ad network partner.adattributionkit's",
                      "reason": "credential-mismatch"
                    }
                  }
                }
              }
            }
          },
          "404": {
            "description": "not registered (`unknown-ad-network`)",
            "content": {
              "application/problem+json": {
                "schema": {
                  "$ref": "#/components/schemas/Problem"
                },
                "examples": {
                  "unknown-ad-network": {
                    "summary": "not registered",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/unknown-ad-network",
                      "title": "Not Found",
                      "status": 404,
                      "detail": "ad network example.adattributionkit is not registered",
                      "reason": "unknown-ad-network"
                    }
                  }
                }
              }
            }
          },
          "413": {
            "$ref": "#/components/responses/Problem"
          },
          "429": {
            "description": "the network's 10 requests of the current minute are spent (`rate-limited`, with `Retry-After`)",
            "content": {
              "application/problem+json": {
                "schema": {
                  "$ref": "#/components/schemas/Problem"
                },
                "examples": {
                  "rate-limited": {
                    "summary": "the minute's 10 requests are spent",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/rate-limited",
                      "title": "Too Many Requests",
                      "status": 429,
                      "detail": "ad network example.adattributionkit asked for test postbacks 10 times this minute; retry after Retry-After seconds",
                      "reason": "rate-limited"
                    }
                  }
                }
              }
            }
          },
          "503": {
            "$ref": "#/components/responses/Problem"
          }
        }
      }
    },
    "/v1/admin/ad-networks/{id}/test-postbacks": {
      "servers": [
        {
          "url": "http://{host}:{port}",
          "description": "the admin service (`admin`): the admin API, /metrics, and /ready with details",
          "variables": {
            "host": {
              "default": "127.0.0.1",
              "description": "admin's HTTP_HOST"
            },
            "port": {
              "default": "8081",
              "description": "admin's HTTP_PORT"
            }
          }
        }
      ],
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
      "post": {
        "operationId": "requestTestPostbacksAsAdmin",
        "tags": [
          "Admin"
        ],
        "summary": "Test postbacks for the network's receiver, the server-side counterpart of Apple's developer-settings postbacks: the tier, interaction, conversion type, one or three windows, conversion tag, values and country chosen; made by the same field gating as real postbacks (tier 0 and non-winners get the first window's only), signed with the test key (`TEST_SIGNING_KEY_ID`, `attribution-pipeline-test/0`: a kid of its own, as Apple signs developer-settings postbacks with `apple-development-identifier/1`), sent at once through the dispatcher. Nothing of it enters a crowd, a cap or a device's state. At most 10 requests a minute per network (ingest and admin together); with `ADMIN_TOKEN` (the admin service)",
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
                "$ref": "#/components/schemas/TestPostbackRequest"
              },
              "examples": {
                "tier-0": {
                  "summary": "The defaults at tier 0: one postback",
                  "value": {
                    "tier": 0,
                    "advertised-item-identifier": 1108187390
                  }
                },
                "conversion-tag-not-supported": {
                  "summary": "A tag on an install: refused",
                  "value": {
                    "tier": 2,
                    "advertised-item-identifier": 1108187390,
                    "conversion-tag": "edffbb15-2c70-49c9-883d-c2133e51f3c1"
                  }
                }
              }
            }
          }
        },
        "responses": {
          "202": {
            "description": "on its way: the postbacks reach the network's registered `postback-url` within a second or two (and the advertised app's `AttributionCopyEndpoint`, for a winner, as real ones do), signed with the test key; failures are retried and dead-lettered as for any postback",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/TestPostbacksAccepted"
                },
                "examples": {
                  "tier-0": {
                    "summary": "one postback on its way",
                    "value": {
                      "ad-network-identifier": "example.adattributionkit",
                      "development": true,
                      "event-identifier": "73721473-e6eb-41b0-8f12-d09326cd659f",
                      "postback-identifiers": [
                        "9dc7f1ea-b2dd-438e-a7d2-9552fde63cbf"
                      ],
                      "tier": 0
                    }
                  }
                }
              }
            }
          },
          "400": {
            "description": "a choice out of range (`value-out-of-range`, `invalid-item-identifier`, `invalid-country-code`, `invalid-conversion-tag`, `conversion-tag-not-supported`), a member the request does not have (`unknown-key`), a body naming another network (`invalid-body`), or not this JSON (`invalid-json`)",
            "content": {
              "application/problem+json": {
                "schema": {
                  "$ref": "#/components/schemas/Problem"
                },
                "examples": {
                  "value-out-of-range": {
                    "summary": "a tier past 3",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/value-out-of-range",
                      "title": "Bad Request",
                      "status": 400,
                      "detail": "tier must be 0, 1, 2 or 3",
                      "reason": "value-out-of-range"
                    }
                  },
                  "unknown-key": {
                    "summary": "a member the request does not have",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/unknown-key",
                      "title": "Bad Request",
                      "status": 400,
                      "detail": "teir is not a member of a test-postback request",
                      "reason": "unknown-key"
                    }
                  },
                  "invalid-country-code": {
                    "summary": "a code ISO 3166-1 does not assign",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/invalid-country-code",
                      "title": "Bad Request",
                      "status": 400,
                      "detail": "country-code must be an ISO 3166-1 alpha-2 code in capitals, such as US or DE",
                      "reason": "invalid-country-code"
                    }
                  },
                  "conversion-tag-not-supported": {
                    "summary": "a tag on a conversion that is not a re-engagement",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/conversion-tag-not-supported",
                      "title": "Bad Request",
                      "status": 400,
                      "detail": "conversion-tag names a re-engagement, but conversion-type is download",
                      "reason": "conversion-tag-not-supported"
                    }
                  },
                  "invalid-body": {
                    "summary": "a body naming another ad network",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/invalid-body",
                      "title": "Bad Request",
                      "status": 400,
                      "detail": "ad-network-identifier must be the path's (example.adattributionkit) or absent",
                      "reason": "invalid-body"
                    }
                  }
                }
              }
            }
          },
          "401": {
            "$ref": "#/components/responses/Problem"
          },
          "404": {
            "description": "not registered (`unknown-ad-network`)",
            "content": {
              "application/problem+json": {
                "schema": {
                  "$ref": "#/components/schemas/Problem"
                },
                "examples": {
                  "unknown-ad-network": {
                    "summary": "not registered",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/unknown-ad-network",
                      "title": "Not Found",
                      "status": 404,
                      "detail": "ad network example.adattributionkit is not registered",
                      "reason": "unknown-ad-network"
                    }
                  }
                }
              }
            }
          },
          "413": {
            "$ref": "#/components/responses/Problem"
          },
          "429": {
            "description": "the network's 10 requests of the current minute are spent (`rate-limited`, with `Retry-After`)",
            "content": {
              "application/problem+json": {
                "schema": {
                  "$ref": "#/components/schemas/Problem"
                },
                "examples": {
                  "rate-limited": {
                    "summary": "the minute's 10 requests are spent",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/rate-limited",
                      "title": "Too Many Requests",
                      "status": 429,
                      "detail": "ad network example.adattributionkit asked for test postbacks 10 times this minute; retry after Retry-After seconds",
                      "reason": "rate-limited"
                    }
                  }
                }
              }
            }
          },
          "503": {
            "$ref": "#/components/responses/Problem"
          }
        }
      }
    },
    "/.well-known/jwks.json": {
      "get": {
        "operationId": "getSigningKeys",
        "tags": [
          "Discovery"
        ],
        "summary": "The public keys postbacks are signed with",
        "description": "One key per role, told apart by `kid` (defaults: production `attribution-pipeline/0`, development impressions' postbacks `attribution-pipeline-development/0`, test postbacks `attribution-pipeline-test/0`; a key the dispatcher generated has `-` and 8 hex digits of its public key appended), as Apple keeps `apple-cas-identifier/0`, `apple-development-identifier/0` and `apple-development-identifier/1`. A rotated-out key stays listed for `SIGNING_KEY_GRACE_HOURS` (240 h) after its last signature; fetch the set again when a postback names an unknown `kid`.",
        "responses": {
          "200": {
            "description": "JSON Web Key Set",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/JWKSet"
                },
                "examples": {
                  "keys": {
                    "summary": "the three keys: production, development and test postbacks', the last two generated by the dispatcher (a fingerprint after the kid)",
                    "value": {
                      "keys": [
                        {
                          "alg": "ES256",
                          "crv": "P-256",
                          "kid": "attribution-pipeline-development/0-c1bb3876",
                          "kty": "EC",
                          "use": "sig",
                          "x": "FL7GEAdR1-dET_V3dY9izYmAAk9RX-g0PI5wHhCA57E",
                          "y": "ELx7DovdgF8I6s95zXz-y8KRYfm8P_D-xIDLkr_1t8g"
                        },
                        {
                          "alg": "ES256",
                          "crv": "P-256",
                          "kid": "attribution-pipeline/0",
                          "kty": "EC",
                          "use": "sig",
                          "x": "PzyF4SDkzG70FMzbIqWiqZveKCMZjE_IZn_A0jKhlyQ",
                          "y": "O08KKuTj6cu9Mm22KmXLWFxexYLW8FR9phsa67ew8Wc"
                        },
                        {
                          "alg": "ES256",
                          "crv": "P-256",
                          "kid": "attribution-pipeline-test/0-5bd1e84b",
                          "kty": "EC",
                          "use": "sig",
                          "x": "7BBx_67aw6b7VVobTvGT81VOE7LT9YOCELIKx_WCM_A",
                          "y": "PV3WQWiX4QatJlzTLrhSV2nRl93pQI28w976txaedwI"
                        }
                      ]
                    }
                  }
                }
              }
            }
          }
        }
      }
    },
    "/openapi.json": {
      "get": {
        "operationId": "getOpenAPIDocument",
        "tags": [
          "Discovery"
        ],
        "summary": "This document",
        "responses": {
          "200": {
            "description": "OpenAPI 3.1",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object"
                },
                "examples": {
                  "document": {
                    "summary": "this document, shortened to one operation",
                    "value": {
                      "openapi": "3.1.0",
                      "info": {
                        "title": "attribution-pipeline HTTP API (ingest and admin)",
                        "version": "1.0.0"
                      },
                      "servers": [
                        {
                          "url": "http://{host}:{port}",
                          "description": "the public listener"
                        }
                      ],
                      "tags": [
                        {
                          "name": "Operations"
                        }
                      ],
                      "paths": {
                        "/health": {
                          "get": {
                            "operationId": "getHealth",
                            "tags": [
                              "Operations"
                            ],
                            "responses": {
                              "200": {
                                "description": "alive"
                              }
                            }
                          }
                        }
                      },
                      "components": {}
                    }
                  }
                }
              }
            }
          }
        }
      }
    },
    "/health": {
      "get": {
        "operationId": "getHealth",
        "tags": [
          "Operations"
        ],
        "summary": "Liveness (every listener)",
        "responses": {
          "200": {
            "description": "alive",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "status"
                  ],
                  "properties": {
                    "status": {
                      "type": "string"
                    }
                  }
                },
                "examples": {
                  "alive": {
                    "summary": "alive",
                    "value": {
                      "status": "ok"
                    }
                  }
                }
              }
            }
          }
        }
      },
      "head": {
        "operationId": "headHealth",
        "tags": [
          "Operations"
        ],
        "summary": "Liveness without a body, for load balancers that check with HEAD (every listener)",
        "responses": {
          "200": {
            "description": "alive"
          }
        }
      }
    },
    "/ready": {
      "get": {
        "operationId": "getReadiness",
        "tags": [
          "Operations"
        ],
        "summary": "Readiness: Redis answers (every listener)",
        "responses": {
          "200": {
            "description": "ready",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "status"
                  ],
                  "properties": {
                    "status": {
                      "type": "string"
                    }
                  }
                },
                "examples": {
                  "ready": {
                    "summary": "ready",
                    "value": {
                      "status": "ready"
                    }
                  }
                }
              }
            }
          },
          "503": {
            "description": "not ready: `redis-unreachable`; only the `detail` of admin and of ingest's operations listener carries Redis's error text",
            "content": {
              "application/problem+json": {
                "schema": {
                  "$ref": "#/components/schemas/Problem"
                },
                "examples": {
                  "public-listener": {
                    "summary": "ingest's public listener: the reason alone",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/redis-unreachable",
                      "title": "Service Unavailable",
                      "status": 503,
                      "detail": "Redis does not answer",
                      "reason": "redis-unreachable"
                    }
                  },
                  "operators-listener": {
                    "summary": "admin and ingest's operations listener: Redis's error text",
                    "value": {
                      "type": "https://attribution-pipeline.dev/problems/redis-unreachable",
                      "title": "Service Unavailable",
                      "status": 503,
                      "detail": "redis io: reading a reply failed: Resource temporarily unavailable",
                      "reason": "redis-unreachable"
                    }
                  }
                }
              }
            }
          }
        }
      }
    },
    "/metrics": {
      "servers": [
        {
          "url": "http://{host}:{port}",
          "description": "the admin service (`admin`): the admin API, /metrics, and /ready with details",
          "variables": {
            "host": {
              "default": "127.0.0.1",
              "description": "admin's HTTP_HOST"
            },
            "port": {
              "default": "8081",
              "description": "admin's HTTP_PORT"
            }
          }
        },
        {
          "url": "http://{host}:{port}",
          "description": "ingest's operations listener: /metrics, and /ready with details",
          "variables": {
            "host": {
              "default": "127.0.0.1",
              "description": "ingest's OPERATIONS_HTTP_HOST"
            },
            "port": {
              "default": "8082",
              "description": "ingest's OPERATIONS_HTTP_PORT"
            }
          }
        }
      ],
      "get": {
        "operationId": "getMetrics",
        "tags": [
          "Operations"
        ],
        "summary": "Prometheus metrics",
        "responses": {
          "200": {
            "description": "text exposition format",
            "content": {
              "text/plain": {
                "schema": {
                  "type": "string"
                },
                "examples": {
                  "metrics": {
                    "summary": "a few of ingest's series",
                    "value": "# TYPE build_info gauge\nbuild_info{version=\"0.1.0-dev\",revision=\"unknown\"} 1.0\n# TYPE ingest_events_total counter\ningest_events_total{outcome=\"accepted\"} 26\n# TYPE ingest_request_duration_seconds histogram\ningest_request_duration_seconds_bucket{route=\"/v1/impressions\",method=\"POST\",status=\"2xx\",le=\"0.005\"} 14\ningest_request_duration_seconds_count{route=\"/v1/impressions\",method=\"POST\",status=\"2xx\"} 14\n"
                  }
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
            },
            "examples": {
              "invalid-json": {
                "summary": "400: the body is not this route's JSON (the detail names the member)",
                "value": {
                  "type": "https://attribution-pipeline.dev/problems/invalid-json",
                  "title": "Bad Request",
                  "status": 400,
                  "detail": "missing member interaction.time",
                  "reason": "invalid-json"
                }
              },
              "invalid-time": {
                "summary": "400: a time outside 2000–2100 (milliseconds since 1970 expected)",
                "value": {
                  "type": "https://attribution-pipeline.dev/problems/invalid-time",
                  "title": "Bad Request",
                  "status": 400,
                  "detail": "time must be milliseconds since 1970 between 2000 and 2100; not 1772445600",
                  "reason": "invalid-time"
                }
              },
              "invalid-item-identifier": {
                "summary": "400: the path's item id is not a positive integer",
                "value": {
                  "type": "https://attribution-pipeline.dev/problems/invalid-item-identifier",
                  "title": "Bad Request",
                  "status": 400,
                  "detail": "item ids are positive integers",
                  "reason": "invalid-item-identifier"
                }
              },
              "invalid-ad-network-identifier": {
                "summary": "400: the path's ad network id is not a lowercase id",
                "value": {
                  "type": "https://attribution-pipeline.dev/problems/invalid-ad-network-identifier",
                  "title": "Bad Request",
                  "status": 400,
                  "detail": "ad network ids are lowercase letters, digits, '.', '-' and '_'",
                  "reason": "invalid-ad-network-identifier"
                }
              },
              "unknown-key": {
                "summary": "400: a member the body does not have (registrations and schemas)",
                "value": {
                  "type": "https://attribution-pipeline.dev/problems/unknown-key",
                  "title": "Bad Request",
                  "status": 400,
                  "detail": "windows.0.rules.0.when.sesions is not a member of a conversion-value schema",
                  "reason": "unknown-key"
                }
              },
              "invalid-batch": {
                "summary": "400: a batch body whose items cannot be told apart",
                "value": {
                  "type": "https://attribution-pipeline.dev/problems/invalid-batch",
                  "title": "Bad Request",
                  "status": 400,
                  "detail": "the body is not a JSON array (at byte 0); a batch is a JSON array of event objects, or NDJSON",
                  "reason": "invalid-batch"
                }
              },
              "unauthorized": {
                "summary": "401: no valid admin token (admin routes)",
                "value": {
                  "type": "https://attribution-pipeline.dev/problems/unauthorized",
                  "title": "Unauthorized",
                  "status": 401,
                  "detail": "admin routes need a valid bearer token",
                  "reason": "unauthorized"
                }
              },
              "missing-app-key": {
                "summary": "401: no app key (conversions, updates, activity, evaluate)",
                "value": {
                  "type": "https://attribution-pipeline.dev/problems/missing-app-key",
                  "title": "Unauthorized",
                  "status": 401,
                  "detail": "conversions and updates need the app's key: Authorization: Bearer <app key>",
                  "reason": "missing-app-key"
                }
              },
              "invalid-app-key": {
                "summary": "401: an app key the admin API never issued, or revoked",
                "value": {
                  "type": "https://attribution-pipeline.dev/problems/invalid-app-key",
                  "title": "Unauthorized",
                  "status": 401,
                  "detail": "the app key is not one the admin API issued",
                  "reason": "invalid-app-key"
                }
              },
              "app-key-mismatch": {
                "summary": "403: another app's key",
                "value": {
                  "type": "https://attribution-pipeline.dev/problems/app-key-mismatch",
                  "title": "Forbidden",
                  "status": 403,
                  "detail": "this app key belongs to another advertised app, not 1108187390",
                  "reason": "app-key-mismatch"
                }
              },
              "unknown-ad-network": {
                "summary": "404: the ad network is not registered",
                "value": {
                  "type": "https://attribution-pipeline.dev/problems/unknown-ad-network",
                  "title": "Not Found",
                  "status": 404,
                  "detail": "ad network example.adattributionkit is not registered",
                  "reason": "unknown-ad-network"
                }
              },
              "unknown-advertised-app": {
                "summary": "404: the advertised app is not registered",
                "value": {
                  "type": "https://attribution-pipeline.dev/problems/unknown-advertised-app",
                  "title": "Not Found",
                  "status": 404,
                  "detail": "register advertised app 1108187390 first",
                  "reason": "unknown-advertised-app"
                }
              },
              "unknown-app-key": {
                "summary": "404: the app has no key with this id",
                "value": {
                  "type": "https://attribution-pipeline.dev/problems/unknown-app-key",
                  "title": "Not Found",
                  "status": 404,
                  "detail": "advertised app 1108187390 has no key b1ff894441c9",
                  "reason": "unknown-app-key"
                }
              },
              "no-schema": {
                "summary": "404: the app has no conversion-value schema",
                "value": {
                  "type": "https://attribution-pipeline.dev/problems/no-schema",
                  "title": "Not Found",
                  "status": 404,
                  "detail": "advertised app 1108187390 has no conversion-value schema",
                  "reason": "no-schema"
                }
              },
              "unknown-schema-version": {
                "summary": "404: no such schema version",
                "value": {
                  "type": "https://attribution-pipeline.dev/problems/unknown-schema-version",
                  "title": "Not Found",
                  "status": 404,
                  "detail": "advertised app 1108187390 has no schema version 9",
                  "reason": "unknown-schema-version"
                }
              },
              "unknown-dead-letter": {
                "summary": "404: no such dead letter (replayed already, or erased)",
                "value": {
                  "type": "https://attribution-pipeline.dev/problems/unknown-dead-letter",
                  "title": "Not Found",
                  "status": 404,
                  "detail": "no dead letter 6-1773237612412-0",
                  "reason": "unknown-dead-letter"
                }
              },
              "not-replayable": {
                "summary": "409: a dead letter without a delivery record",
                "value": {
                  "type": "https://attribution-pipeline.dev/problems/not-replayable",
                  "title": "Conflict",
                  "status": 409,
                  "detail": "dead letter 6-1773237612412-0 holds no delivery record to replay",
                  "reason": "not-replayable"
                }
              },
              "body-too-large": {
                "summary": "413: the body is past the route's limit",
                "value": {
                  "type": "https://attribution-pipeline.dev/problems/body-too-large",
                  "title": "Content Too Large",
                  "status": 413,
                  "detail": "bodies are limited to 65536 bytes",
                  "reason": "body-too-large"
                }
              },
              "batch-too-large": {
                "summary": "413: more than 1,000 items in a batch",
                "value": {
                  "type": "https://attribution-pipeline.dev/problems/batch-too-large",
                  "title": "Content Too Large",
                  "status": 413,
                  "detail": "a batch holds at most 1000 items; this one 1001",
                  "reason": "batch-too-large"
                }
              },
              "idempotency-key-reused": {
                "summary": "422: the Idempotency-Key was used with another body",
                "value": {
                  "type": "https://attribution-pipeline.dev/problems/idempotency-key-reused",
                  "title": "Unprocessable Content",
                  "status": 422,
                  "detail": "this Idempotency-Key was used with a different body",
                  "reason": "idempotency-key-reused"
                }
              },
              "redis-unreachable": {
                "summary": "503: Redis is unavailable (retry after Retry-After)",
                "value": {
                  "type": "https://attribution-pipeline.dev/problems/redis-unreachable",
                  "title": "Service Unavailable",
                  "status": 503,
                  "detail": "Redis is unavailable; retry after Retry-After (an event with the same Idempotency-Key: it may be written)",
                  "reason": "redis-unreachable"
                }
              }
            }
          }
        }
      }
    },
    "schemas": {
      "TestPostbackRequest": {
        "type": "object",
        "required": [
          "tier",
          "advertised-item-identifier"
        ],
        "additionalProperties": false,
        "properties": {
          "tier": {
            "type": "integer",
            "minimum": 0,
            "maximum": 3,
            "description": "the crowd anonymity tier whose fields the postbacks carry"
          },
          "advertised-item-identifier": {
            "type": "integer",
            "minimum": 1,
            "description": "the app the postbacks name"
          },
          "ad-interaction-type": {
            "type": "string",
            "enum": [
              "click",
              "view"
            ],
            "default": "click"
          },
          "conversion-type": {
            "type": "string",
            "enum": [
              "download",
              "redownload",
              "re-engagement"
            ],
            "default": "download"
          },
          "windows": {
            "type": "integer",
            "enum": [
              1,
              3
            ],
            "default": 1,
            "description": "the first window's postback, or one per window (a winner at tier 1 or above; tier 0 and non-winners get the first only)"
          },
          "conversion-tag": {
            "type": "string",
            "description": "re-engagements only (else `conversion-tag-not-supported`), a lowercase UUID (else `invalid-conversion-tag`); checked and echoed, not carried: postbacks have no tag"
          },
          "conversion-value": {
            "type": "integer",
            "minimum": 0,
            "maximum": 63,
            "description": "the fine value, sent at tiers 2 and 3 in the first window"
          },
          "coarse-conversion-value": {
            "type": "string",
            "enum": [
              "low",
              "medium",
              "high"
            ],
            "description": "sent from tier 1 where no fine value goes, and in later windows"
          },
          "country-code": {
            "type": "string",
            "pattern": "^[A-Z]{2}$",
            "description": "ISO 3166-1 alpha-2, sent at tier 3 in a winner's first postback"
          },
          "did-win": {
            "type": "boolean",
            "default": true
          },
          "publisher-item-identifier": {
            "type": "integer",
            "minimum": 0,
            "default": 0,
            "description": "sent at tier 3 in a winner's first postback"
          },
          "source-identifier": {
            "type": "integer",
            "minimum": 0,
            "maximum": 9999,
            "default": 1234,
            "description": "its last 2 digits at tiers 0 and 1, in later windows and in non-winners"
          },
          "source-identifier-digits": {
            "type": "integer",
            "minimum": 2,
            "maximum": 4,
            "default": 4,
            "description": "the digits a tier 2 or 3 first postback keeps (2 at tiers 0 and 1)"
          },
          "ad-network-identifier": {
            "type": "string",
            "description": "optional; when present, the path's"
          }
        }
      },
      "TestPostbacksAccepted": {
        "type": "object",
        "required": [
          "ad-network-identifier",
          "event-identifier",
          "postback-identifiers",
          "tier",
          "development"
        ],
        "properties": {
          "ad-network-identifier": {
            "type": "string"
          },
          "event-identifier": {
            "type": "string",
            "description": "the request's id on `events`"
          },
          "postback-identifiers": {
            "type": "array",
            "items": {
              "type": "string"
            },
            "description": "one per postback made, in window order: each postback's `postback-identifier`"
          },
          "tier": {
            "type": "integer"
          },
          "development": {
            "type": "boolean",
            "const": true,
            "description": "not a production postback: signed with the test key (`TEST_SIGNING_KEY_ID`), whose `kid` is in the JWKS beside the production and development keys'"
          },
          "conversion-tag": {
            "type": "string",
            "description": "echoed when asked"
          }
        }
      },
      "NetworkCredential": {
        "type": "object",
        "required": [
          "credential",
          "ad-network-identifier",
          "credential-identifier",
          "issued-at"
        ],
        "properties": {
          "credential": {
            "type": "string",
            "description": "`nc_` and 64 hex digits; shown only here, Redis keeps its SHA-256"
          },
          "ad-network-identifier": {
            "type": "string"
          },
          "credential-identifier": {
            "type": "string",
            "description": "first 12 hex digits of the credential's SHA-256: what listing and revoking use"
          },
          "issued-at": {
            "type": "integer"
          }
        }
      },
      "Erased": {
        "type": "object",
        "required": [
          "device-identifier",
          "deleted-keys",
          "deleted-entries"
        ],
        "properties": {
          "device-identifier": {
            "type": "string"
          },
          "deleted-keys": {
            "type": "integer"
          },
          "deleted-entries": {
            "type": "integer"
          }
        }
      },
      "Counts": {
        "type": "object",
        "additionalProperties": {
          "type": "integer",
          "minimum": 0
        },
        "description": "event name → count"
      },
      "Revenue": {
        "type": "object",
        "additionalProperties": {
          "type": "number",
          "minimum": 0
        },
        "description": "ISO 4217 code → amount"
      },
      "ConversionValueSchema": {
        "type": "object",
        "required": [
          "windows"
        ],
        "properties": {
          "version": {
            "type": "integer",
            "description": "assigned on upload"
          },
          "windows": {
            "type": "array",
            "items": {
              "type": "object",
              "required": [
                "window",
                "rules"
              ],
              "properties": {
                "window": {
                  "type": "integer",
                  "minimum": 0,
                  "maximum": 2
                },
                "allow-decrease": {
                  "type": "boolean"
                },
                "rules": {
                  "type": "array",
                  "description": "most valuable first: the first rule whose condition holds gives the value",
                  "items": {
                    "type": "object",
                    "required": [
                      "when",
                      "fine",
                      "coarse"
                    ],
                    "properties": {
                      "when": {
                        "type": "object",
                        "properties": {
                          "sessions": {
                            "type": "integer",
                            "minimum": 0
                          },
                          "events": {
                            "$ref": "#/components/schemas/Counts"
                          },
                          "revenue": {
                            "$ref": "#/components/schemas/Revenue"
                          }
                        }
                      },
                      "fine": {
                        "type": "integer",
                        "minimum": 0,
                        "maximum": 63
                      },
                      "coarse": {
                        "type": "string",
                        "enum": [
                          "low",
                          "medium",
                          "high"
                        ]
                      },
                      "lock": {
                        "type": "boolean"
                      }
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
            "minimum": 1
          },
          "time": {
            "type": "integer",
            "description": "ms since 1970"
          },
          "sessions": {
            "type": "integer",
            "minimum": 0
          },
          "events": {
            "$ref": "#/components/schemas/Counts"
          },
          "revenue": {
            "$ref": "#/components/schemas/Revenue"
          },
          "conversionTag": {
            "type": "string",
            "description": "routes the activity to the re-engagement conversion with this tag, as an update's does; `conversion-tag` (as the conversion's answer spells it) is read as the same member, and both at once must agree"
          }
        },
        "description": "at least one of `sessions`, `events`, `revenue` (else 400 `invalid-activity`)"
      },
      "EvaluationRequest": {
        "type": "object",
        "required": [
          "advertised-item-identifier",
          "window"
        ],
        "properties": {
          "advertised-item-identifier": {
            "type": "integer",
            "minimum": 1
          },
          "window": {
            "type": "integer",
            "minimum": 0,
            "maximum": 2
          },
          "sessions": {
            "type": "integer",
            "minimum": 0
          },
          "events": {
            "$ref": "#/components/schemas/Counts"
          },
          "revenue": {
            "$ref": "#/components/schemas/Revenue"
          },
          "previous": {
            "type": "object",
            "required": [
              "fine",
              "coarse",
              "lock"
            ],
            "properties": {
              "fine": {
                "type": "integer",
                "minimum": 0,
                "maximum": 63
              },
              "coarse": {
                "type": "string",
                "enum": [
                  "low",
                  "medium",
                  "high"
                ]
              },
              "lock": {
                "type": "boolean"
              }
            }
          },
          "version": {
            "type": "integer",
            "minimum": 1
          }
        }
      },
      "Evaluation": {
        "type": "object",
        "required": [
          "version",
          "changed"
        ],
        "properties": {
          "version": {
            "type": "integer"
          },
          "changed": {
            "type": "boolean"
          },
          "fineConversionValue": {
            "type": "integer"
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
          }
        }
      },
      "DeadLetters": {
        "type": "object",
        "required": [
          "dead-letters",
          "total"
        ],
        "properties": {
          "total": {
            "type": "integer"
          },
          "next": {
            "type": "string",
            "description": "present when the page is full: pass it as `before` for the next page"
          },
          "dead-letters": {
            "type": "array",
            "items": {
              "type": "object",
              "required": [
                "id",
                "postback-identifier",
                "destination",
                "error",
                "replayable"
              ],
              "properties": {
                "id": {
                  "type": "string"
                },
                "postback-identifier": {
                  "type": "string"
                },
                "destination": {
                  "type": "string",
                  "enum": [
                    "ad-network",
                    "advertiser-copy"
                  ]
                },
                "error": {
                  "type": "string"
                },
                "url": {
                  "type": "string"
                },
                "attempts": {
                  "type": "integer"
                },
                "first-attempt-at": {
                  "type": "integer",
                  "description": "ms since 1970"
                },
                "replayable": {
                  "type": "boolean"
                }
              }
            }
          }
        }
      },
      "Replayed": {
        "type": "object",
        "required": [
          "replayed"
        ],
        "properties": {
          "replayed": {
            "type": "integer"
          }
        }
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
            "enum": [
              "invalid-components",
              "unknown-ad-network",
              "unknown-advertised-app",
              "invalid-conversion-tag",
              "conversion-tag-not-supported",
              "invalid-json",
              "invalid-body",
              "invalid-device-identifier",
              "invalid-time",
              "invalid-interaction",
              "invalid-skadnetwork-impression",
              "invalid-country-code",
              "invalid-marketplace-identifier",
              "invalid-reengagement-url",
              "value-out-of-range",
              "invalid-activity",
              "invalid-idempotency-key",
              "invalid-ad-network-identifier",
              "invalid-item-identifier",
              "invalid-public-key",
              "invalid-postback-url",
              "invalid-copy-endpoint",
              "invalid-property-list",
              "invalid-configuration",
              "unknown-key",
              "invalid-schema",
              "invalid-version",
              "invalid-dead-letter-id",
              "destination-invalid",
              "destination-not-https",
              "destination-private-address",
              "destination-unresolvable",
              "unauthorized",
              "missing-app-key",
              "invalid-app-key",
              "app-key-mismatch",
              "credential-mismatch",
              "no-schema",
              "unknown-schema-version",
              "unknown-dead-letter",
              "unknown-app-key",
              "unknown-credential",
              "unknown-publisher-app",
              "not-replayable",
              "idempotency-key-reused",
              "invalid-batch",
              "batch-too-large",
              "not-found",
              "method-not-allowed",
              "body-too-large",
              "body-timeout",
              "http-error",
              "internal-error",
              "redis-unreachable",
              "replication-timeout",
              "consumer-group-missing",
              "overloaded",
              "pipeline-lagging",
              "rate-limited"
            ]
          }
        }
      },
      "BatchItemKey": {
        "type": "object",
        "properties": {
          "idempotency-key": {
            "type": "string",
            "minLength": 1,
            "maxLength": 255,
            "description": "this item's Idempotency-Key: a retry with the same key and item returns the first answer"
          }
        }
      },
      "BatchAnswer": {
        "type": "object",
        "required": [
          "accepted",
          "refused",
          "results"
        ],
        "properties": {
          "accepted": {
            "type": "integer",
            "description": "items answered 202"
          },
          "refused": {
            "type": "integer",
            "description": "items answered with a problem"
          },
          "results": {
            "type": "array",
            "items": {
              "$ref": "#/components/schemas/BatchResult"
            },
            "description": "one per item, in the order sent"
          }
        }
      },
      "BatchResult": {
        "type": "object",
        "required": [
          "status"
        ],
        "properties": {
          "status": {
            "type": "integer",
            "description": "202, or the problem's status"
          },
          "event-identifier": {
            "type": "string",
            "description": "when 202; also with a 503 `replication-timeout` (the event was written)"
          },
          "conversion-tag": {
            "type": "string",
            "description": "when 202 for a re-engagement conversion"
          },
          "open-url": {
            "type": "string",
            "description": "when 202 for a re-engagement that gave a `reengagement-url`: the URL to open, as a single request's `open-url`"
          },
          "type": {
            "type": "string"
          },
          "title": {
            "type": "string"
          },
          "reason": {
            "type": "string",
            "description": "when refused: the problem's reason, one of Problem's `reason` values"
          },
          "detail": {
            "type": "string"
          }
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
          },
          "open-url": {
            "type": "string",
            "description": "re-engagements that gave a `reengagement-url`: that URL with `AdAttributionKitReengagementOpen=<conversion-tag>` as its last query parameter (one the URL had is replaced; its other parameters and fragment stay as sent), whether or not a conversion is created"
          },
          "conversion": {
            "type": "string",
            "enum": [
              "created",
              "not-created",
              "pending"
            ],
            "description": "re-engagements with `Prefer: wait=N`: whether attribution created a conversion, or `pending` when it did not decide within N seconds"
          },
          "reason": {
            "type": "string",
            "enum": [
              "no-eligible-impression",
              "cooldown",
              "re-engagement-app-cap",
              "re-engagement-device-cap"
            ],
            "description": "with `conversion: not-created`: why (the refusal the app's refusal list shows)"
          }
        }
      },
      "Interaction": {
        "description": "how the person met the ad: a click, or a view (with its time on screen, or recorded in one call)",
        "oneOf": [
          {
            "$ref": "#/components/schemas/ClickInteraction"
          },
          {
            "$ref": "#/components/schemas/ViewInteraction"
          }
        ]
      },
      "ClickInteraction": {
        "type": "object",
        "required": [
          "type",
          "time",
          "loaded-at"
        ],
        "properties": {
          "type": {
            "type": "string",
            "enum": [
              "click"
            ]
          },
          "time": {
            "type": "integer",
            "description": "the tap"
          },
          "loaded-at": {
            "type": "integer",
            "description": "when the impression was loaded (a tap counts within 15 minutes; not after `time`, else 400 `invalid-interaction`)"
          }
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
          },
          "reengagement-url": {
            "type": "string",
            "maxLength": 2048,
            "format": "uri",
            "description": "re-engagements only: the absolute https URL (a universal link) the ad opens the app with, percent-encoded (printable ASCII, no spaces), at most 2,048 bytes; the answer's `open-url` is this URL with `AdAttributionKitReengagementOpen` appended. Otherwise, or on an install, 400 `invalid-reengagement-url`"
          }
        }
      },
      "ValueUpdateRequest": {
        "description": "a conversion-value update in AdAttributionKit's shape or in SKAdNetwork's; one body is one shape (members of both: `invalid-json`). Either reaches the app's pending conversion, whichever framework's impression won",
        "oneOf": [
          {
            "$ref": "#/components/schemas/AdAttributionKitValueUpdate"
          },
          {
            "$ref": "#/components/schemas/SKAdNetworkValueUpdate"
          }
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
        "allOf": [
          {
            "$ref": "#/components/schemas/ValueUpdateSubject"
          }
        ],
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
            "type": "string",
            "description": "; `conversion-tag` (as the conversion's answer spells it) is read as the same member, and both at once must agree"
          }
        }
      },
      "SKAdNetworkValueUpdate": {
        "description": "the arguments of SKAdNetwork's `updatePostbackConversionValue(_:coarseValue:lockWindow:)`. The same update as AdAttributionKit's, with no conversion types or tag; one that no conversion takes within 2 days (an organic install's) is ignored and counted in `winner_skadnetwork_updates_ignored_total`, not refused. Beside `ValueUpdateSubject`'s members",
        "allOf": [
          {
            "$ref": "#/components/schemas/ValueUpdateSubject"
          }
        ],
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
        },
        "required": [
          "app-key",
          "advertised-item-identifier",
          "key-identifier",
          "issued-at"
        ]
      },
      "AppKeys": {
        "type": "object",
        "properties": {
          "advertised-item-identifier": {
            "type": "string"
          },
          "keys": {
            "type": "array",
            "items": {
              "type": "object",
              "properties": {
                "key-identifier": {
                  "type": "string"
                },
                "issued-at": {
                  "type": "integer",
                  "description": "milliseconds since 1970; absent for keys issued before it was recorded"
                }
              }
            }
          }
        }
      },
      "Rejections": {
        "type": "object",
        "properties": {
          "unsigned-rejections": {
            "type": "array",
            "description": "ad networks only: the last 100 refused impressions naming this network whose signature did not verify, newest first, each as in `rejections`",
            "items": {
              "type": "object"
            }
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
                  "enum": [
                    "invalid-header",
                    "invalid-payload",
                    "invalid-signature",
                    "invalid-components",
                    "unsupported-algorithm",
                    "key-identifier-mismatch",
                    "unknown-ad-network",
                    "unknown-advertised-app",
                    "publisher-not-listing-network",
                    "impression-expired",
                    "impression-from-future",
                    "impression-replayed",
                    "click-too-late",
                    "view-too-short",
                    "overlapping-view",
                    "no-eligible-impression",
                    "cooldown",
                    "re-engagement-app-cap",
                    "re-engagement-device-cap",
                    "conversion-not-found",
                    "pending-limit",
                    "invalid-conversion-tag"
                  ]
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
      },
      "ViewInteraction": {
        "type": "object",
        "description": "a view. With `begin`, its time on screen (begin and end, as SKAdNetwork's startImpression and endImpression record it): when the ad appeared (the view counts after 2 s on screen, else it is refused `view-too-short`; not after `time`, else 400 `invalid-interaction`). One ad network may have one such view of an app open on a device at a time (`overlapping-view`). Without `begin`, a view recorded in one call (AdAttributionKit's `AppImpression.handleView()`, iOS 26.2; a SKAdNetwork view without `begin` is 400 `invalid-interaction`): a view at `time` for winner selection, recency and the view caps; Apple documents neither a minimum time on screen nor the one-open-view rule for it, so neither applies",
        "required": [
          "type",
          "time"
        ],
        "properties": {
          "type": {
            "type": "string",
            "enum": [
              "view"
            ]
          },
          "time": {
            "type": "integer",
            "description": "the end of the view; for a one-call view, when it was recorded"
          },
          "begin": {
            "type": "integer",
            "description": "when the ad appeared on screen (a begin/end view only)"
          }
        }
      }
    }
  }
}
"""##
}
