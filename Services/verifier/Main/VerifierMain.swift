import ServiceRuntime
import VerifierService

@main
struct VerifierMain {
    static func main() async throws {
        try await PipelineService.main(Verifier.help, settings: Verifier.Settings.init) { settings, service in
            try await Verifier.build(settings, service: service).run()
        }
    }
}
