import AttributionWinnerService
import ServiceRuntime

@main
struct AttributionWinnerMain {
    static func main() async throws {
        try await PipelineService.main(AttributionWinner.help, settings: AttributionWinner.Settings.init) {
            settings, service in
            try await AttributionWinner.build(settings, service: service).run()
        }
    }
}
