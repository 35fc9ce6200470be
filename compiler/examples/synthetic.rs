//! Writes a synthetic catalogue: `cargo run -p faultline-compiler --example synthetic -- 1000 DIR`.

fn main() -> std::process::ExitCode {
    let mut args = std::env::args().skip(1);
    let rules = args.next().and_then(|n| n.parse().ok()).unwrap_or(1000);
    let directory = std::path::PathBuf::from(args.next().unwrap_or_else(|| "synthetic".to_owned()));
    let text = faultline_compiler::synthetic::synthetic_catalogue(rules, None);
    match std::fs::create_dir_all(&directory)
        .and_then(|()| std::fs::write(directory.join("catalogue.rules"), text))
    {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            let _ = std::io::Write::write_all(
                &mut std::io::stderr(),
                format!("error: {error}\n").as_bytes(),
            );
            std::process::ExitCode::from(2)
        }
    }
}
