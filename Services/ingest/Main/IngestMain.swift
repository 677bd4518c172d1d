import IngestService
import ServiceRuntime

@main
struct IngestMain {
    static func main() async throws {
        if let flag = Ingest.help.answer(), let text = Ingest.printed(flag) { return print(text) }
        try await PipelineService.main(Ingest.help, settings: IngestSettings.init) { settings, service in
            try await Ingest.build(settings, service: service).run()
        }
    }
}
