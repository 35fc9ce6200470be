//! `faultline diagnostic [CODE]`: the documentation of the diagnostic codes.

use faultline_dsl::Code;

use super::{Exit, err, out};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A code such as `FL0010` or a name such as `duplicate-rule-id`; omit to list every code.
    code: Option<String>,
}

pub fn run(args: &Args) -> Exit {
    match &args.code {
        None => {
            let mut text = String::new();
            for code in Code::ALL {
                text.push_str(&format!(
                    "{}  {:<8} {:<24} {}\n",
                    code.as_str(),
                    code.severity().as_str(),
                    code.slug(),
                    code.title()
                ));
            }
            out(&text);
            Exit::Clean
        }
        Some(name) => match Code::parse(name) {
            Some(code) => {
                out(&format!(
                    "{} {} ({}): {}\n\n{}\n",
                    code.as_str(),
                    code.slug(),
                    code.severity().as_str(),
                    code.title(),
                    code.doc()
                ));
                Exit::Clean
            }
            None => {
                err(&format!(
                    "error: `{name}` is not a diagnostic code; `faultline diagnostic` lists them"
                ));
                Exit::Failure
            }
        },
    }
}
